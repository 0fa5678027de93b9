// Side-by-side speed of the reference (transformers.js) on the same inputs
// as the Go benchmarks; run through bench.sh, which prepares the inputs.
//
//   node bench.mjs <transformers.node.mjs> <tokenizer dir> <prose.json>
//
// Prints load time and encode throughput over the prose paragraphs (one
// encode call per paragraph, after one warm-up pass), like
// BenchmarkLoad and BenchmarkEncodeProse.
import fs from "node:fs";
import { pathToFileURL } from "node:url";

const [modPath, dir, prosePath] = process.argv.slice(2);
const mod = await import(pathToFileURL(modPath).href);
const paras = JSON.parse(fs.readFileSync(prosePath, "utf8"));
const bytes = paras.reduce((n, p) => n + Buffer.byteLength(p, "utf8"), 0);

const loads = [];
let tok;
for (let i = 0; i < 3; i++) {
  const t0 = performance.now();
  const tj = JSON.parse(fs.readFileSync(dir + "/tokenizer.json", "utf8"));
  const tc = JSON.parse(fs.readFileSync(dir + "/tokenizer_config.json", "utf8"));
  tok = new mod.PreTrainedTokenizer(tj, tc);
  loads.push(performance.now() - t0);
}
for (const p of paras) tok.encode(p, { add_special_tokens: false });
const reps = 5;
const t0 = performance.now();
for (let r = 0; r < reps; r++) {
  for (const p of paras) tok.encode(p, { add_special_tokens: false });
}
const s = (performance.now() - t0) / 1000;
console.log(
  `${dir.split("/").slice(-3, -2)[0]}: load ${Math.min(...loads).toFixed(0)} ms (best of 3), ` +
    `encode ${((bytes * reps) / s / 1e6).toFixed(2)} MB/s over ${paras.length} paragraphs (${bytes} bytes)`,
);
