// Runs greedy generation with transformers.js (onnxruntime-node) on an
// optimum-layout model folder, the same way engine/onnx's
// BenchmarkTransformersJS runs Prism, and prints one JSON line:
// {"ttft_ms": ..., "tokens_per_second": ..., "new_tokens": ...}
//
//   node transformersjs_bench.mjs MODEL_DIR PROMPT_TOKENS NEW_TOKENS RUNS
//
// The @huggingface/transformers package is resolved from TRANSFORMERS_JS_DIR
// (a folder holding node_modules), installed outside the repository with
// `npm install --ignore-scripts @huggingface/transformers`.
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [dir, promptTokens, newTokens, runs] = process.argv.slice(2);
const base = process.env.TRANSFORMERS_JS_DIR;
if (!dir || !base) {
  console.error('usage: TRANSFORMERS_JS_DIR=... node transformersjs_bench.mjs MODEL_DIR PROMPT_TOKENS NEW_TOKENS RUNS');
  process.exit(2);
}
const require = createRequire(path.join(base, 'package.json'));
const tjs = await import(pathToFileURL(require.resolve('@huggingface/transformers')).href);
const { AutoModelForCausalLM, Tensor, env, BaseStreamer } = tjs;

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.dirname(path.resolve(dir)) + '/';
const model = await AutoModelForCausalLM.from_pretrained(path.basename(dir), {
  dtype: 'fp32',
  device: 'cpu',
  use_external_data_format: true,
  session_options: process.env.PRISM_THREADS ? { intraOpNumThreads: Number(process.env.PRISM_THREADS) } : {},
});

// The same prompt as engine/onnx's promptIDs: ids 1 + (i*37) % 250.
function prompt(n, first) {
  const ids = new BigInt64Array(n);
  for (let i = 0; i < n; i++) ids[i] = BigInt(1 + ((i * 37) % 250));
  ids[0] = BigInt(first);
  return ids;
}

class Clock extends BaseStreamer {
  constructor() { super(); this.times = []; this.first = true; }
  put() {
    // The first call carries the prompt; every later one a new token.
    if (this.first) { this.first = false; return; }
    this.times.push(performance.now());
  }
  end() {}
}

const n = Number(promptTokens), m = Number(newTokens);
const results = [];
for (let r = 0; r <= Number(runs); r++) {
  const ids = prompt(n, 1 + r); // a different first token per run: no cache reuse
  const input_ids = new Tensor('int64', ids, [1, n]);
  const attention_mask = new Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
  const clock = new Clock();
  const start = performance.now();
  await model.generate({ input_ids, attention_mask, max_new_tokens: m, min_new_tokens: m, do_sample: false, streamer: clock });
  const t = clock.times;
  if (r === 0) continue; // warm-up
  results.push({ ttft: t[0] - start, rate: (t.length - 1) / ((t[t.length - 1] - t[0]) / 1000), tokens: t.length });
}
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(JSON.stringify({
  ttft_ms: median(results.map((x) => x.ttft)),
  tokens_per_second: median(results.map((x) => x.rate)),
  new_tokens: results[0].tokens,
}));
await model.dispose();
