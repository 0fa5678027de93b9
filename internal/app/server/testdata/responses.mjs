// The official openai npm package against the server's POST /v1/responses:
// responses.create streamed and not (with log-probabilities too), and the
// responses.stream helper, on the scripted models "think" and "tool". Prints one JSON object for the
// Go test to check.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.PRISM_TEST_BASE_URL, apiKey: "none", maxRetries: 0 });

const whole = await client.responses.create({ model: "think", input: "Hi!" });
const reasoning = whole.output.find((it) => it.type === "reasoning");

const events = [];
let streamedText = "";
let streamedReasoning = "";
const stream = await client.responses.create({ model: "think", input: "Hi!", stream: true });
for await (const ev of stream) {
  if (events.at(-1) !== ev.type || !ev.type.endsWith(".delta")) events.push(ev.type);
  if (ev.type === "response.output_text.delta") streamedText += ev.delta;
  if (ev.type === "response.reasoning_text.delta") streamedReasoning += ev.delta;
}

// The helper accumulates the events into a response, content parts and all
// (its final response has no output_text shortcut: the text is read from
// the message item).
const helper = await client.responses.stream({ model: "think", input: "Hi!" }).finalResponse();
const helperText = helper.output.filter((it) => it.type === "message")
  .flatMap((it) => it.content).filter((c) => c.type === "output_text").map((c) => c.text).join("");

const tools = [{
  type: "function", name: "get_weather", description: "Current weather", strict: false,
  parameters: { type: "object", properties: { city: { type: "string" }, unit: { type: "string" } }, required: ["city"] },
}];
const call = (await client.responses.create({ model: "tool", input: "Weather in Paris?", tools })).output[0];
let streamedArguments = "";
for await (const ev of await client.responses.create({ model: "tool", input: "Weather in Paris?", tools, stream: true })) {
  if (ev.type === "response.function_call_arguments.delta") streamedArguments += ev.delta;
}

// Log-probabilities: the message part's, the streamed deltas' joined, and
// output_text.done's, each entry as its token, log-probability and the
// alternatives' tokens.
const entries = (list) => list.map((e) => ({ token: e.token, logprob: e.logprob, top: e.top_logprobs.map((a) => a.token) }));
const lpParams = { model: "think", input: "Hi!", temperature: 0, top_logprobs: 2, include: ["message.output_text.logprobs"] };
const lpPart = (await client.responses.create(lpParams)).output.find((it) => it.type === "message").content[0];
const streamedLogprobs = [];
let doneLogprobs = null;
for await (const ev of await client.responses.create({ ...lpParams, stream: true })) {
  if (ev.type === "response.output_text.delta") streamedLogprobs.push(...entries(ev.logprobs));
  if (ev.type === "response.output_text.done") doneLogprobs = entries(ev.logprobs);
}

console.log(JSON.stringify({
  Text: whole.output_text,
  StreamedText: streamedText,
  HelperText: helperText,
  Reasoning: reasoning?.content?.[0]?.text ?? null,
  StreamedReasoning: streamedReasoning,
  Status: whole.status,
  Events: events,
  Last: events.at(-1),
  Arguments: call.arguments,
  StreamedArguments: streamedArguments,
  CallName: call.name,
  ReasoningTokens: whole.usage.output_tokens_details.reasoning_tokens,
  OutputTokens: whole.usage.output_tokens,
  LogprobText: lpPart.text,
  LogprobBytes: lpPart.logprobs.flatMap((e) => e.bytes),
  Logprobs: entries(lpPart.logprobs),
  StreamedLogprobs: streamedLogprobs,
  DoneLogprobs: doneLogprobs,
}));
