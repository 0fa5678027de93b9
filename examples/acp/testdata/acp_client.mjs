// Drives the built Prism ACP agent with the official ACP TypeScript SDK's
// client and prints what it saw as one JSON object.
//   node acp_client.mjs AGENT_BINARY WORKSPACE
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [agentPath, workspace] = process.argv.slice(2);
const child = spawn(agentPath, [], { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

let updates = [];
let permission = "allow_once"; // or "reject_once", or "cancel"
const reads = [];
const writes = {};
const permissions = [];

const app = acp
  .client({ name: "prism-acceptance" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    reads.push(params.path);
    return { content: "hello from the editor" };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    writes[params.path] = params.content;
    return {};
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, agent }) => {
    permissions.push({ title: params.toolCall.title, kind: params.toolCall.kind, options: params.options.map((o) => o.optionId) });
    if (permission === "cancel") {
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: permission } };
  });

const settle = () => new Promise((r) => setImmediate(r));

function summarize(u) {
  const by = (kind) => u.filter((x) => x.sessionUpdate === kind);
  const text = (kind) => by(kind).map((x) => x.content.text).join("");
  return {
    thought: text("agent_thought_chunk"),
    message: text("agent_message_chunk"),
    toolCalls: by("tool_call").map((x) => ({ kind: x.kind, status: x.status, title: x.title })),
    toolUpdates: by("tool_call_update").map((x) => x.status),
    usage: by("usage_update").map((x) => ({ used: x.used, size: x.size })),
  };
}

const out = await app.connectWith(stream, async (cx) => {
  const init = await cx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  const result = { protocolVersion: init.protocolVersion, loadSession: init.agentCapabilities.loadSession, turns: {} };
  async function turn(name, model, mode, text) {
    permission = mode;
    const s = await cx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    result.configOption = s.configOptions?.[0]?.id;
    result.models = s.configOptions?.[0]?.options?.map((o) => o.value);
    await cx.request(acp.methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "model", value: model });
    updates = [];
    const r = await cx.request(acp.methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text }] });
    await settle();
    result.turns[name] = { stopReason: r.stopReason, ...summarize(updates) };
  }
  await turn("think", "think", "allow_once", "Hi!");
  await turn("read", "reader", "allow_once", "What is in notes.txt?");
  await turn("write", "writer", "allow_once", "Write out.txt");
  await turn("reject", "rejected", "reject_once", "Write out.txt");
  await turn("cancel", "writer", "cancel", "Write out.txt");
  return result;
});
out.reads = reads;
out.writes = writes;
out.permissions = permissions;
child.stdin.end();
const code = await new Promise((r) => child.on("exit", (c) => r(c)));
out.exitCode = code;
console.log(JSON.stringify(out));
