// SPEC-041 §4 across two MCP server processes that share one SQLite
// signals store: lifecycle verbs never carry pending_signals, the next
// other verb does, prism_signals_pending polls, hd_exec drains.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

async function connect(name) {
  const transport = new StdioClientTransport({ command: process.env.MCP_BIN, args: [], env: process.env, stderr: 'inherit' });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function call(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

const noKey = (out, what) => assert.ok(!('pending_signals' in out), `${what} carries pending_signals: ${JSON.stringify(out)}`);
const types = (out) => out.pending_signals.map((s) => s.type);

const frank = await connect('frank');
const donna = await connect('donna');
await call(frank, 'prism_start', { identity: 'Frank' });

// §4.1-4.4: a signal sent while no Donna session is active.
await call(frank, 'prism_send_signal', { to: 'Donna', type: 'first', payload: { n: 1 } });
const started = await call(donna, 'prism_start', { identity: 'Donna' });
noKey(started, 'prism_start');
noKey(await call(donna, 'prism_checkpoint', { note: 'half way' }), 'prism_checkpoint');
const status = await call(donna, 'prism_status');
assert.deepEqual(types(status), ['first']);
assert.equal(status.pending_signals[0].from, 'Frank');
assert.deepEqual(status.pending_signals[0].payload, { n: 1 });
assert.deepEqual(types(await call(donna, 'prism_status')), [], 'a delivered signal came again');

// §4.5: the explicit poll right after a start.
const wrapped = await call(donna, 'prism_wrap');
noKey(wrapped, 'prism_wrap');
await call(frank, 'prism_send_signal', { to: 'Donna', type: 'second' });
noKey(await call(donna, 'prism_start', { identity: 'Donna' }), 'prism_start');
assert.deepEqual(types(await call(donna, 'prism_signals_pending')), ['second']);

// §4.7: hd_exec drains.
noKey(await call(donna, 'prism_wrap'), 'prism_wrap');
await call(frank, 'prism_send_signal', { to: 'Donna', type: 'third' });
const picked = await call(donna, 'hd_exec', { identity: 'Donna' });
assert.deepEqual(types(picked), ['third']);

// §4.8: start then wrap with nothing between leaves the signal queued for
// the next session's first non-lifecycle verb.
noKey(await call(donna, 'prism_wrap'), 'prism_wrap');
await call(frank, 'prism_send_signal', { to: 'Donna', type: 'fourth' });
noKey(await call(donna, 'prism_start', { identity: 'Donna' }), 'prism_start');
noKey(await call(donna, 'prism_wrap'), 'prism_wrap');
noKey(await call(donna, 'prism_start', { identity: 'Donna' }), 'prism_start');
assert.deepEqual(types(await call(donna, 'prism_status')), ['fourth']);

// Frank's own verbs piggyback too, with nothing queued for him.
assert.deepEqual(types(await call(frank, 'prism_status')), []);

await frank.close();
await donna.close();
console.log(JSON.stringify({ ok: true }));
