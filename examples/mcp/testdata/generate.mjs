// Drives examples/mcp over stdio with the official TypeScript client: lists
// the tools, calls generate with progress, and checks the structured result.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const transport = new StdioClientTransport({ command: process.env.MCP_BIN, args: [], env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'prism-test', version: '1.0.0' });
await client.connect(transport);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
for (const want of ['generate', 'list_models', 'status', 'benchmark', 'prism_start', 'prism_checkpoint', 'prism_wrap',
  'prism_signals_pending', 'prism_send_signal', 'prism_status', 'hd_exec']) {
  assert.ok(names.includes(want), `tools/list lacks ${want}: ${names}`);
}
for (const t of tools) {
  assert.equal(t.inputSchema?.type, 'object', `${t.name} has no input schema`);
  assert.ok(t.outputSchema, `${t.name} has no output schema`);
}
const wrap = tools.find((t) => t.name === 'prism_wrap');
assert.match(wrap.description, /prism_signals_pending immediately before prism_wrap/);

const progress = [];
const result = await client.callTool({ name: 'generate', arguments: { prompt: 'Say hello.', max_tokens: 64 } }, undefined,
  { onprogress: (p) => progress.push(p) });
assert.ok(!result.isError, JSON.stringify(result));
const out = result.structuredContent;
assert.equal(out.text.trim(), 'Hello from Prism.');
assert.equal(out.reasoning, 'plan');
assert.equal(out.model, 'think');
assert.equal(out.backend, 'in-process');
assert.ok(out.usage.completion_tokens > 0 && out.usage.prompt_tokens > 0, JSON.stringify(out.usage));
assert.ok(out.warnings.some((w) => w.includes('unreachable')), JSON.stringify(out.warnings));
assert.ok(progress.length >= 1, 'no progress notification');
for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, 'progress must increase');

const models = await client.callTool({ name: 'list_models', arguments: {} });
assert.deepEqual(models.structuredContent.models.map((m) => m.id), ['think', 'weather-json']);
const status = await client.callTool({ name: 'status', arguments: {} });
assert.equal(status.structuredContent.resident_model, 'think');
assert.equal(status.structuredContent.device, 'cpu');

// A JSON Schema for the answer goes out as response_format json_schema.
const schema = { type: 'object', additionalProperties: false, required: ['city', 'temperature'],
  properties: { city: { type: 'string' }, temperature: { type: 'integer' } } };
const structured = await client.callTool({ name: 'generate', arguments: { model: 'weather-json', prompt: 'Weather?', schema } });
assert.ok(!structured.isError, JSON.stringify(structured));
assert.deepEqual(JSON.parse(structured.structuredContent.text), { city: 'Paris', temperature: 21 });
const badSchema = await client.callTool({ name: 'generate', arguments: { model: 'weather-json', prompt: 'x', schema: { type: 'nope' } } });
assert.ok(badSchema.isError);
assert.match(badSchema.content[0].text, /invalid_request_error/);

const bad = await client.callTool({ name: 'generate', arguments: { prompt: 'x', messages: [{ role: 'user', content: 'y' }] } });
assert.ok(bad.isError);
assert.match(bad.content[0].text, /invalid_argument/);

// benchmark: a short run with progress.
const benchProgress = [];
const bench = await client.callTool({ name: 'benchmark', arguments: { max_tokens: 8 } }, undefined,
  { onprogress: (p) => benchProgress.push(p) });
assert.ok(!bench.isError, JSON.stringify(bench));
assert.equal(bench.structuredContent.device, 'cpu');
assert.ok(bench.structuredContent.ttft_ms > 0 && bench.structuredContent.completion_tokens > 0, JSON.stringify(bench.structuredContent));
assert.ok(benchProgress.length >= 1, 'no benchmark progress');

// Cancel on the first progress notification: the call is rejected, and
// the server answers the next call as usual.
const ac = new AbortController();
await assert.rejects(client.callTool({ name: 'generate', arguments: { prompt: 'Say hello.' } }, undefined,
  { signal: ac.signal, onprogress: () => ac.abort() }));
const again = await client.callTool({ name: 'generate', arguments: { prompt: 'Say hello.' } });
assert.equal(again.structuredContent.text.trim(), 'Hello from Prism.');

await client.close();
console.log(JSON.stringify({ ok: true, progress: progress.length }));
