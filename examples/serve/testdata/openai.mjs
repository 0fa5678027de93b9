// The official `openai` npm package against a running examples/serve on the
// scripted models "think", "tool" and "json": what each model says is fixed,
// so every answer can be checked exactly. PRISM_URL is the server's base
// URL (http://HOST:PORT). Prints "ok" when every check passes; a failed
// check throws, and node exits non-zero with the reason.
import assert from "node:assert/strict";
import OpenAI from "openai";
// ajv is the JSON Schema validator the pinned MCP SDK brings along.
import Ajv from "ajv";

const client = new OpenAI({ baseURL: process.env.PRISM_URL + "/v1", apiKey: "unused", maxRetries: 0 });
const hi = [{ role: "user", content: "Hi!" }];
const weather = [{
  type: "function",
  function: {
    name: "get_weather", description: "Current weather",
    parameters: { type: "object", properties: { city: { type: "string" }, unit: { type: "string" } }, required: ["city"] },
  },
}];

// Reads a stream to the end: the text of each delta field, the tool-call
// fragments by index, the finish reason and the chunks without choices.
async function collect(stream) {
  const out = { content: "", reasoning: "", reasoningAlt: "", calls: [], finish: null, usageChunks: [], chunks: 0 };
  for await (const chunk of stream) {
    out.chunks++;
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.choices.length === 0) {
      out.usageChunks.push(chunk.usage);
      continue;
    }
    const c = chunk.choices[0];
    const d = c.delta ?? {};
    out.content += d.content ?? "";
    out.reasoning += d.reasoning_content ?? "";
    out.reasoningAlt += d.reasoning ?? "";
    for (const tc of d.tool_calls ?? []) {
      assert.equal(typeof tc.index, "number", "every tool-call delta has an index");
      const call = (out.calls[tc.index] ??= { id: "", name: "", arguments: "", firsts: 0 });
      if (tc.id) {
        call.id = tc.id;
        call.firsts++;
        assert.equal(tc.type, "function");
      }
      call.name += tc.function?.name ?? "";
      call.arguments += tc.function?.arguments ?? "";
    }
    if (c.finish_reason) out.finish = c.finish_reason;
  }
  return out;
}

async function chat() {
  const whole = await client.chat.completions.create({ model: "think", messages: hi });
  const m = whole.choices[0].message;
  assert.equal(m.content.trim(), "Hello there, friend.");
  assert.equal(m.reasoning_content, "\nThe user greets me.\n", "reasoning is separated from the content");
  assert.equal(m.reasoning, m.reasoning_content, "reasoning under both names");
  assert.ok(!m.content.includes("<think>"), "no think tag in the content");
  assert.equal(whole.choices[0].finish_reason, "stop");
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);

  const streamed = await collect(await client.chat.completions.create({
    model: "think", messages: hi, stream: true, stream_options: { include_usage: true },
  }));
  assert.equal(streamed.content, m.content, "the streamed text concatenates to the non-streamed text");
  assert.equal(streamed.reasoning, m.reasoning_content);
  assert.equal(streamed.reasoningAlt, m.reasoning_content);
  assert.equal(streamed.finish, "stop");
  assert.equal(streamed.usageChunks.length, 1, "one usage chunk with include_usage");
  const u = streamed.usageChunks[0];
  assert.equal(u.completion_tokens, whole.usage.completion_tokens);
  assert.equal(u.prompt_tokens, whole.usage.prompt_tokens);
  assert.ok(u.prompt_tokens_details.cached_tokens > 0, "a repeated prompt reuses the cached prefix");

  const plain = await collect(await client.chat.completions.create({ model: "think", messages: hi, stream: true }));
  assert.equal(plain.usageChunks.length, 0, "no usage chunk without include_usage");

  // The SDK's own stream helper accumulates the same message.
  const runner = client.chat.completions.stream({ model: "think", messages: hi });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, m.content);
}

async function toolCall() {
  const whole = await client.chat.completions.create({ model: "tool", messages: hi, tools: weather });
  const wc = whole.choices[0].message.tool_calls;
  assert.equal(whole.choices[0].finish_reason, "tool_calls");
  assert.equal(wc.length, 1);
  assert.equal(wc[0].function.name, "get_weather");

  const s = await collect(await client.chat.completions.create({ model: "tool", messages: hi, tools: weather, stream: true }));
  assert.equal(s.finish, "tool_calls");
  assert.equal(s.calls.length, 1);
  const call = s.calls[0];
  assert.equal(call.firsts, 1, "id and type come once, on the first fragment");
  assert.match(call.id, /^call_/);
  assert.equal(call.name, "get_weather");
  const args = JSON.parse(call.arguments); // the fragments join to valid JSON
  assert.deepEqual(args, { city: "Paris", unit: "celsius" });
  assert.equal(call.arguments, wc[0].function.arguments);
  assert.equal(s.content, "", "a call is not content");
}

async function structured() {
  const schema = {
    type: "object", additionalProperties: false, required: ["city", "temperature"],
    properties: { city: { type: "string" }, temperature: { type: "integer" } },
  };
  const validate = new Ajv({ strict: true }).compile(schema);
  const response_format = { type: "json_schema", json_schema: { name: "weather", schema, strict: true } };
  const whole = await client.chat.completions.create({ model: "json", messages: hi, response_format });
  const value = JSON.parse(whole.choices[0].message.content);
  assert.ok(validate(value), "the answer validates: " + JSON.stringify(validate.errors));
  assert.equal(value.city, "Paris");
  assert.equal(whole.choices[0].finish_reason, "stop");

  const s = await collect(await client.chat.completions.create({ model: "json", messages: hi, response_format, stream: true }));
  assert.ok(validate(JSON.parse(s.content)), "the streamed answer validates");
  assert.equal(s.content, whole.choices[0].message.content);
}

async function errors() {
  // The SDK turns the JSON error body into its typed errors.
  await assert.rejects(client.chat.completions.create({ model: "think", messages: hi, temprature: 1 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.code, "unknown_parameter");
    assert.equal(e.param, "temprature");
    assert.equal(e.type, "invalid_request_error");
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: "nope", messages: hi }), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError, String(e));
    assert.equal(e.code, "model_not_found");
    assert.equal(e.param, "model");
    return true;
  });
}

async function models() {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  for (const want of ["think", "tool", "json"]) assert.ok(ids.includes(want), `models ${ids} lack ${want}`);
  const one = await client.models.retrieve("tool");
  assert.equal(one.id, "tool");
}

for (const [name, check] of Object.entries({ chat, toolCall, structured, errors, models })) {
  try {
    await check();
  } catch (e) {
    console.error(`${name}: ${e.stack ?? e}`);
    process.exit(1);
  }
}
console.log("ok");
