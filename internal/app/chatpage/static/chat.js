// Prism's chat page: plain JavaScript over the server's own OpenAI-compatible
// endpoints. Everything it keeps (the conversation, the settings, the API key)
// lives in this page's memory only.
"use strict";

const $ = (id) => document.getElementById(id);
const ui = {
  model: $("model"), health: $("health"), fallback: $("fallback"), log: $("log"), empty: $("empty"), demo: $("demo-note"),
  input: $("input"), send: $("send"), stop: $("stop"), composer: $("composer"),
  settings: $("settings"), settingsToggle: $("settings-toggle"), newChat: $("new-chat"),
  system: $("system"), temperature: $("temperature"), maxTokens: $("max-tokens"), tools: $("tools"),
  keyDialog: $("key-dialog"), keyForm: $("key-form"), key: $("key"), keyError: $("key-error"),
  pull: $("pull"), pullName: $("pull-name"), pullStart: $("pull-start"), pullStop: $("pull-stop"),
  pullStatus: $("pull-status"), pullBar: $("pull-bar"), pullDetail: $("pull-detail"), pullError: $("pull-error"),
};

const state = {
  key: "",            // the API key, typed once, never stored
  history: [],        // the messages sent back with every request (the system prompt is added at send time)
  run: null,          // the generation in flight: {controller}
  keyWaiters: [],     // callbacks waiting for a key to be typed
  pull: null,         // the pull in flight: {controller}
  variants: [],       // "ID:VARIANT" names of pulls that named a variant, offered beside ID
};

// ---- talking to the server ----

function headers(extra) {
  const h = Object.assign({}, extra);
  if (state.key) h["Authorization"] = "Bearer " + state.key;
  return h;
}

// readError turns a failed response into {status, code, message, param}.
async function readError(resp) {
  const out = { status: resp.status, code: "", message: resp.statusText || "request failed", param: "" };
  try {
    const body = await resp.json();
    const e = body && body.error;
    if (e) {
      out.code = e.code || e.type || "";
      out.message = e.message || out.message;
      out.param = e.param || "";
    }
  } catch (_) { /* not JSON: keep the status line */ }
  return out;
}

// getJSON fetches a JSON endpoint, asking for the key when the server wants one.
async function getJSON(path) {
  for (;;) {
    const resp = await fetch(path, { headers: headers(), cache: "no-store" });
    if (resp.ok) return resp.json();
    const err = await readError(resp);
    if (resp.status === 401) {
      await askKey(state.key ? "The server refused that key: " + err.message : "");
      continue;
    }
    throw Object.assign(new Error(err.message), { info: err });
  }
}

function askKey(problem) {
  ui.keyError.hidden = !problem;
  ui.keyError.textContent = problem || "";
  if (!ui.keyDialog.open) ui.keyDialog.showModal();
  ui.key.select();
  return new Promise((resolve) => state.keyWaiters.push(resolve));
}

ui.keyForm.addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.key = ui.key.value.trim();
  if (!state.key) return;
  ui.keyDialog.close();
  const waiters = state.keyWaiters.splice(0);
  waiters.forEach((resolve) => resolve());
  ui.input.focus();
});
ui.keyDialog.addEventListener("cancel", (ev) => ev.preventDefault()); // no way on without a key

// ---- models and health ----

// loadModels fills the picker and chooses prefer (a model just pulled) when
// it is listed, else the resident model, else the first.
async function loadModels(prefer) {
  try {
    const [list, health] = await Promise.all([getJSON("/v1/models"), getJSON("/health").catch(() => null)]);
    const models = (list && list.data) || [];
    ui.model.replaceChildren();
    for (const m of models) {
      const opt = document.createElement("option");
      opt.value = m.id;
      opt.dataset.demo = m.demo ? "1" : "";
      opt.textContent = m.id + (m.backend && m.backend !== "onnx" ? " (" + m.backend + ")" : "");
      ui.model.append(opt);
      // GET /v1/models lists a folder once; a variant pulled by name is
      // offered by name, so the chat runs the variant that was pulled.
      for (const v of state.variants) {
        if (v.startsWith(m.id + ":") && !models.some((o) => o.id === v)) ui.model.append(new Option(v, v));
      }
    }
    if (models.length === 0) {
      const opt = document.createElement("option");
      opt.textContent = health && health.pull ? "no models: pull one in Settings" : "no models: start serve with -model or -models-dir";
      ui.model.append(opt);
      ui.model.disabled = true;
    } else {
      ui.model.disabled = false;
      const ids = [...ui.model.options].map((o) => o.value);
      ui.model.value = [prefer, health && health.model].find((id) => id && ids.includes(id)) || ids[0];
    }
    if (health) showHealth(health);
    showDemoNote();
    updateComposer();
  } catch (e) {
    ui.model.replaceChildren(new Option("models unavailable"));
    showHealthError(e);
  }
}

// showDemoNote says, on the first screen, that the chosen model is the
// built-in demo (GET /v1/models marks it) and how to serve a real one.
function showDemoNote() {
  const opt = ui.model.selectedOptions[0];
  ui.demo.hidden = !(opt && opt.dataset.demo);
}

function showHealth(h) {
  const where = h.model ? h.model + " on " + (h.device || "unknown device").toUpperCase() : "no model loaded";
  ui.health.replaceChildren(el("span", "dot"),
    document.createTextNode(where + " · " + (h.busy ? "generating" : "idle") + " · queue " + h.queue_depth + "/" + h.max_queue));
  ui.health.className = "health " + (h.status !== "ok" ? "down" : h.busy ? "busy" : h.fallback_reason ? "warn" : "ok");
  ui.health.title = "GET /health: " + JSON.stringify(h, null, 1);
  // Say exactly what the server says about the device, never a guess.
  ui.fallback.hidden = !h.fallback_reason;
  ui.fallback.textContent = h.fallback_reason ? (h.device || "unknown device").toUpperCase() + " — " + h.fallback_reason : "";
  ui.pull.hidden = !h.pull && !state.pull; // offered only where POST /api/pull is served
}

function toggleFallback() {
  const open = ui.fallback.classList.toggle("open");
  ui.fallback.setAttribute("aria-expanded", String(open));
}

function showHealthError(e) {
  const info = e.info;
  ui.health.replaceChildren(el("span", "dot"), document.createTextNode(
    info ? "health: " + (info.code || "HTTP " + info.status) + ": " + info.message : "server unreachable: " + e.message));
  ui.health.className = "health down";
}

async function refreshHealth() {
  try {
    showHealth(await getJSON("/health"));
  } catch (e) {
    showHealthError(e);
  }
}

// ---- rendering ----

function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

// renderText shows text with fenced code blocks and inline code, built from
// text nodes only: nothing the model says is ever parsed as HTML.
function renderText(node, text) {
  const frag = document.createDocumentFragment();
  const parts = text.split(/```/);
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      const nl = part.indexOf("\n");
      const lang = nl > 0 ? part.slice(0, nl).trim() : "";
      const pre = el("pre");
      const code = el("code", "", nl >= 0 && /^[\w+.-]*$/.test(lang) ? part.slice(nl + 1) : part);
      if (lang) pre.dataset.lang = lang;
      pre.append(code);
      frag.append(pre);
      return;
    }
    part.split(/`([^`\n]+)`/).forEach((seg, j) => {
      frag.append(j % 2 === 1 ? el("code", "", seg) : document.createTextNode(seg));
    });
  });
  node.replaceChildren(frag);
}

function nearBottom() {
  const l = ui.log;
  return l.scrollHeight - l.scrollTop - l.clientHeight < 80;
}

function scrollDown(force) {
  if (!force && !nearBottom()) return;
  ui.log.scrollTop = ui.log.scrollHeight;
  requestAnimationFrame(() => { ui.log.scrollTop = ui.log.scrollHeight; }); // after the layout settles
}

function addUser(text) {
  ui.empty.hidden = true;
  const node = $("tpl-user").content.firstElementChild.cloneNode(true);
  const body = node.querySelector(".body");
  renderText(body, text);
  if (text.length > 700 || text.split("\n").length > 12) {
    // A long message (a pasted file) is folded so the answer stays in view.
    body.classList.add("clamped");
    const more = el("button", "more", "Show all (" + text.length + " characters)");
    more.type = "button";
    more.addEventListener("click", () => {
      const folded = body.classList.toggle("clamped");
      more.textContent = folded ? "Show all (" + text.length + " characters)" : "Show less";
    });
    node.append(more);
  }
  ui.log.append(node);
  scrollDown(true);
  return node;
}

function addAssistant() {
  ui.empty.hidden = true;
  const node = $("tpl-assistant").content.firstElementChild.cloneNode(true);
  node.classList.add("pending");
  ui.log.append(node);
  scrollDown(true);
  return node;
}

function showError(node, info) {
  const box = node.querySelector(".error");
  box.hidden = false;
  box.replaceChildren(
    el("span", "code", info.code || "error"),
    el("span", "status", info.status ? " · HTTP " + info.status : ""),
    el("span", "status", info.param ? " · param " + info.param : ""),
    el("span", "message", info.message));
}

function fmtMs(ms) {
  return ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(2) + " s";
}

// ---- a turn ----

function settingsBody(model) {
  const body = { model, messages: [], stream: true, stream_options: { include_usage: true } };
  const system = ui.system.value.trim();
  if (system) body.messages.push({ role: "system", content: system });
  body.messages.push(...state.history);
  if (ui.temperature.value !== "") body.temperature = Number(ui.temperature.value);
  if (ui.maxTokens.value !== "") body.max_tokens = Number(ui.maxTokens.value);
  const tools = ui.tools.value.trim();
  if (tools) {
    let parsed;
    try {
      parsed = JSON.parse(tools);
    } catch (e) {
      throw { status: 0, code: "invalid_tools", param: "tools", message: "the Tools setting is not JSON: " + e.message };
    }
    if (!Array.isArray(parsed)) throw { status: 0, code: "invalid_tools", param: "tools", message: "the Tools setting must be a JSON array" };
    if (parsed.length) body.tools = parsed;
  }
  return body;
}

// turn sends the conversation and streams the answer into a new message.
// userNode is the message that started it (null when continuing after tool
// results); it is marked failed, and dropped from the history, if the
// server refuses the request.
async function turn(userNode, userText) {
  const model = ui.model.value;
  const node = addAssistant();
  const view = {
    node, body: node.querySelector(".body"), thoughts: node.querySelector(".thoughts"),
    reasoning: node.querySelector(".reasoning"), calls: node.querySelector(".calls"),
    stats: node.querySelector(".stats"), notice: node.querySelector(".notice"),
  };
  const acc = { content: "", reasoning: "", calls: [], finish: "", usage: null, first: 0, error: null, dirty: false };
  const sent = state.history.length;
  let body;
  try {
    body = settingsBody(model);
  } catch (info) {
    return refuse(view, userNode, userText, sent, info);
  }
  const controller = new AbortController();
  state.run = { controller };
  updateComposer();
  const t0 = performance.now();
  let stopped = false;
  try {
    const resp = await fetch("/v1/chat/completions", {
      method: "POST", signal: controller.signal,
      headers: headers({ "Content-Type": "application/json", "Accept": "text/event-stream" }),
      body: JSON.stringify(body),
    });
    refreshHealth();
    if (!resp.ok) {
      const info = await readError(resp);
      if (resp.status === 401) askKey("The server asks for a key: " + info.message).then(() => ui.input.focus());
      return refuse(view, userNode, userText, sent, info);
    }
    const fallback = resp.headers.get("X-Prism-Template-Fallback");
    if (fallback) {
      view.notice.hidden = false;
      view.notice.textContent = "The model's chat template could not be used; the built-in format was: " + fallback;
    }
    await readStream(resp, (chunk) => onChunk(chunk, acc, view, t0));
  } catch (e) {
    if (e.name === "AbortError") stopped = true;
    else acc.error = { status: 0, code: "network_error", message: String(e.message || e) };
  } finally {
    state.run = null;
  }
  const t1 = performance.now();
  paint(acc, view);
  node.classList.remove("pending");
  if (acc.error) showError(node, acc.error);
  finishStats(view, acc, t0, t1, stopped);
  if (!keep(acc) && userNode && (stopped || acc.error)) {
    // Nothing came back: the question stays out of the conversation, so
    // the next one does not follow an unanswered turn.
    state.history.length = sent - 1;
    userNode.classList.add("failed");
    userNode.title = "not part of the conversation: no answer came back";
  }
  if (acc.finish === "tool_calls") offerResults(view, acc);
  updateComposer();
  refreshHealth();
  scrollDown();
}

function refuse(view, userNode, userText, sent, info) {
  state.history.length = sent - (userNode ? 1 : 0);
  if (userNode) {
    userNode.classList.add("failed");
    userNode.title = "not part of the conversation: the server refused it";
    if (!ui.input.value) {
      ui.input.value = userText; // give it back to edit
      grow();
    }
  }
  view.node.classList.remove("pending");
  showError(view.node, info);
  state.run = null;
  updateComposer();
  refreshHealth();
  scrollDown(true);
}

// readStream calls onEvent with each data payload of an event stream.
async function readStream(resp, onEvent) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data) continue;
      if (data === "[DONE]") return;
      onEvent(JSON.parse(data));
    }
  }
}

function onChunk(chunk, acc, view, t0) {
  if (chunk.error) {
    acc.error = { status: 0, code: chunk.error.code || chunk.error.type, message: chunk.error.message, param: chunk.error.param };
    return;
  }
  if (chunk.usage) acc.usage = chunk.usage;
  const choice = chunk.choices && chunk.choices[0];
  if (!choice) return;
  const d = choice.delta || {};
  const thought = d.reasoning_content ?? d.reasoning ?? ""; // the server sends both names; read one
  const got = (d.content || "") + thought;
  if ((got || (d.tool_calls && d.tool_calls.length)) && !acc.first) acc.first = performance.now() - t0;
  if (d.content) acc.content += d.content;
  if (thought) acc.reasoning += thought;
  for (const tc of d.tool_calls || []) {
    const c = acc.calls[tc.index] || (acc.calls[tc.index] = { id: "", type: "function", function: { name: "", arguments: "" } });
    if (tc.id) c.id = tc.id;
    if (tc.type) c.type = tc.type;
    if (tc.function && tc.function.name) c.function.name += tc.function.name;
    if (tc.function && tc.function.arguments) c.function.arguments += tc.function.arguments;
  }
  if (choice.finish_reason) acc.finish = choice.finish_reason;
  if (!acc.dirty) {
    acc.dirty = true;
    // Skipped when the answer's end painted first: a late frame would
    // replace the call cards and drop their result forms.
    requestAnimationFrame(() => { if (acc.dirty) paint(acc, view); });
  }
}

function paint(acc, view) {
  acc.dirty = false;
  const follow = nearBottom();
  if (acc.reasoning) {
    view.reasoning.hidden = false;
    view.thoughts.textContent = acc.reasoning.trim();
  }
  renderText(view.body, acc.content.replace(/^\s+/, ""));
  view.calls.replaceChildren(...acc.calls.filter(Boolean).map(callCard));
  if (follow) scrollDown(true);
}

function callCard(c) {
  const card = el("section", "call");
  card.setAttribute("aria-label", "tool call " + c.function.name);
  const head = el("header");
  head.append(el("span", "", "call"), el("span", "name mono", c.function.name || "…"), el("span", "id mono", c.id));
  let args = c.function.arguments;
  try {
    args = JSON.stringify(JSON.parse(args), null, 2);
  } catch (_) { /* still streaming, or not JSON: show it as it came */ }
  card.append(head, el("pre", "args", args));
  return card;
}

function finishStats(view, acc, t0, t1, stopped) {
  const parts = [];
  if (acc.first) parts.push("TTFT " + fmtMs(acc.first));
  const u = acc.usage;
  if (u) {
    const n = u.completion_tokens;
    const gen = (t1 - t0 - acc.first) / 1000;
    if (n > 1 && gen > 0) parts.push((n - 1) / gen >= 100 ? Math.round((n - 1) / gen) + " tok/s" : ((n - 1) / gen).toFixed(1) + " tok/s");
    parts.push(n + " tokens");
    const cached = u.prompt_tokens_details && u.prompt_tokens_details.cached_tokens;
    parts.push("prompt " + u.prompt_tokens + (cached ? " (" + cached + " cached)" : ""));
  } else if (stopped) {
    parts.push("tokens not counted (stopped before the usage chunk)");
  }
  parts.push("");
  view.stats.replaceChildren(document.createTextNode(parts.join(" · ")));
  const finish = stopped ? "stopped" : acc.finish || (acc.error ? "error" : "none");
  view.stats.append(el("span", "finish finish-" + finish, "finish " + (stopped ? "stopped (Stop pressed)" : finish)));
  view.stats.title = "TTFT: from sending to the first token. tok/s: the tokens after the first over the time from the first token to the end.";
}

// keep adds what the model said to the conversation, and reports whether
// there was anything to add.
function keep(acc) {
  const calls = acc.calls.filter(Boolean);
  if (!acc.content && !calls.length) return false;
  const msg = { role: "assistant", content: acc.content };
  if (acc.reasoning) msg.reasoning_content = acc.reasoning;
  if (calls.length) msg.tool_calls = calls;
  state.history.push(msg);
  return true;
}

// offerResults lets the person answer each call; once every call has a
// result the conversation goes on.
function offerResults(view, acc) {
  const calls = acc.calls.filter(Boolean);
  const cards = view.calls.querySelectorAll(".call");
  let pending = calls.length;
  calls.forEach((c, i) => {
    const form = el("form");
    const input = el("input");
    input.placeholder = "result of " + c.function.name + " (sent as a tool message)";
    input.setAttribute("aria-label", "result of " + c.function.name);
    const btn = el("button", "", "Send result");
    btn.type = "submit";
    form.append(input, btn);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (state.run) return;
      state.history.push({ role: "tool", tool_call_id: c.id, content: input.value });
      form.replaceWith(el("div", "result", "result: " + input.value));
      if (--pending === 0) turn(null, "");
    });
    cards[i].append(form);
  });
  const first = view.calls.querySelector("input");
  if (first) first.focus();
}

// ---- pulling a model (POST /api/pull, served with -pull) ----

// readLines calls onLine with each JSON line of a response.
async function readLines(resp, onLine) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
    const lines = buf.split("\n");
    buf = done ? "" : lines.pop();
    for (const line of lines) if (line.trim()) onLine(JSON.parse(line));
    if (done) return;
  }
}

function fmtBytes(n) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return (i && n < 10 ? n.toFixed(1) : Math.round(n)) + " " + units[i];
}

function fmtSeconds(s) {
  s = Math.ceil(s);
  return s < 60 ? s + " s" : s < 3600 ? Math.floor(s / 60) + " min " + (s % 60) + " s" : Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min";
}

// showPullProgress shows one line of the stream. The live region changes
// only when the step or the file does, so a screen reader is not flooded;
// the bar and the byte counts move with every line.
function showPullProgress(ev) {
  const what = ev.status === "downloading" && ev.file
    ? "Downloading " + ev.file + " (file " + Math.min(ev.files_done + 1, ev.files) + " of " + ev.files + ")"
    : ev.status === "linking" ? "Verified; linking the files into the cache" : ev.status === "done" || ev.status === "success" ? "Pulled; reading the model list" : ev.status;
  if (ui.pullStatus.textContent !== what) ui.pullStatus.textContent = what;
  ui.pullBar.hidden = false;
  ui.pullBar.max = ev.total || 1;
  ui.pullBar.value = ev.completed || 0;
  const parts = [fmtBytes(ev.completed || 0) + " of " + fmtBytes(ev.total || 0)];
  if (ev.bytes_per_second) parts.push(fmtBytes(ev.bytes_per_second) + "/s");
  if (ev.remaining_seconds) parts.push(fmtSeconds(ev.remaining_seconds) + " left");
  ui.pullDetail.textContent = parts.join(" · ");
}

function showPullError(info) {
  ui.pullError.hidden = false;
  ui.pullError.replaceChildren(el("span", "code", info.code || "error"),
    el("span", "", info.status ? " · HTTP " + info.status + ": " : ": "), el("span", "message", info.message));
}

function setPulling(on) {
  ui.pullName.disabled = on;
  ui.pullStart.hidden = on;
  ui.pullStop.hidden = !on;
  ui.pullBar.hidden = !on;
  // Back to the name field, unless the person has moved on (to the chat).
  if (!on && (document.activeElement === document.body || ui.pull.contains(document.activeElement))) ui.pullName.focus();
}

// postPull sends the pull, asking for the key when the server wants one,
// and returns the response that streams it, or throws the refusal.
async function postPull(name, signal) {
  for (;;) {
    const resp = await fetch("/api/pull", {
      method: "POST", signal, headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify({ model: name }),
    });
    if (resp.ok) return resp;
    const info = await readError(resp);
    if (resp.status !== 401) throw Object.assign(new Error(info.message), { info });
    await askKey(state.key ? "The server refused that key: " + info.message : "");
  }
}

// streamPull runs one pull and returns its last progress line, its error
// and whether Stop ended it.
async function streamPull(name, signal) {
  const out = { last: null, info: null, stopped: false };
  try {
    const resp = await postPull(name, signal);
    await readLines(resp, (ev) => {
      if (ev.status === "error") out.info = Object.assign({ status: 0, code: "", message: "" }, ev.error, { code: ev.error.code || ev.error.type });
      else showPullProgress(out.last = ev);
    });
  } catch (e) {
    if (e.name === "AbortError") out.stopped = true;
    else out.info = e.info || { status: 0, code: "network_error", message: String(e.message || e) };
  }
  return out;
}

async function pullModel(name) {
  const controller = new AbortController();
  state.pull = { controller };
  ui.pullError.hidden = true;
  ui.pullDetail.textContent = "";
  ui.pullStatus.textContent = "Asking the hub for " + name + "…";
  setPulling(true);
  try {
    const { last, info, stopped } = await streamPull(name, controller.signal);
    // A rate and a time left are only true while the pull runs.
    ui.pullDetail.textContent = last && (stopped || info) ? fmtBytes(last.completed || 0) + " of " + fmtBytes(last.total || 0) + " on disk" : "";
    if (stopped) {
      ui.pullStatus.textContent = "Stopped. The files downloaded so far stay in the cache; pulling again resumes them.";
    } else if (!info && last && last.status === "success") {
      await chooseModel(name, last);
    } else {
      ui.pullStatus.textContent = "The pull of " + name + " failed.";
      showPullError(info || { status: 0, code: "incomplete", message: "the stream ended before the pull finished" });
    }
  } finally {
    state.pull = null;
    setPulling(false);
  }
}

// chooseModel reads the model list again after a pull and chooses the
// model by the name asked for: with the variant when one was named, else
// the model as listed, whose variant the server picks as the pull did.
async function chooseModel(name, done) {
  let id = done.model;
  if (done.variant && /:[^/]*$/.test(name)) {
    id = done.model + ":" + done.variant;
    if (!state.variants.includes(id)) state.variants.push(id);
  }
  ui.pullName.value = "";
  await loadModels(id);
  ui.pullStatus.textContent = "Pulled " + done.model + (done.variant ? " (" + done.variant + ")" : "") + ", " + fmtBytes(done.total) +
    (ui.model.value === id ? "; " + id + " is chosen in the model list." : "; the model list does not show it (see the server's log).");
}

// ---- composer ----

function updateComposer() {
  const busy = !!state.run;
  ui.send.hidden = busy;
  ui.stop.hidden = !busy;
  ui.send.disabled = ui.model.disabled;
}

function submit() {
  const text = ui.input.value;
  if (state.run || !text.trim() || ui.model.disabled) return;
  ui.input.value = "";
  grow();
  const node = addUser(text);
  state.history.push({ role: "user", content: text });
  turn(node, text);
}

function stop() {
  if (state.run) state.run.controller.abort();
}

function newChat() {
  stop();
  state.history = [];
  ui.log.replaceChildren(ui.empty);
  ui.empty.hidden = false;
  ui.input.focus();
}

function grow() {
  ui.input.style.height = "auto";
  ui.input.style.height = Math.min(ui.input.scrollHeight + 2, 192) + "px";
}

function toggleSettings() {
  const open = ui.settings.hidden;
  ui.settings.hidden = !open;
  ui.settingsToggle.setAttribute("aria-expanded", String(open));
  (open ? ui.system : ui.input).focus();
}

ui.composer.addEventListener("submit", (ev) => { ev.preventDefault(); submit(); });
ui.input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    submit();
  }
});
ui.input.addEventListener("input", grow);
ui.stop.addEventListener("click", () => { stop(); ui.input.focus(); });
ui.newChat.addEventListener("click", newChat);
ui.model.addEventListener("change", showDemoNote);
ui.settingsToggle.addEventListener("click", toggleSettings);
ui.pull.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const name = ui.pullName.value.trim();
  if (name && !state.pull) pullModel(name);
});
ui.pullStop.addEventListener("click", () => { if (state.pull) state.pull.controller.abort(); });
ui.fallback.addEventListener("click", toggleFallback);
ui.fallback.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggleFallback(); }
});
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && state.run) { ev.preventDefault(); stop(); }
  else if (ev.altKey && ev.code === "KeyN") { ev.preventDefault(); newChat(); }
  else if (ev.altKey && ev.code === "KeyS") { ev.preventDefault(); toggleSettings(); }
});
document.addEventListener("visibilitychange", () => { if (!document.hidden) refreshHealth(); });
setInterval(() => { if (!document.hidden && !ui.keyDialog.open) refreshHealth(); }, 5000);

loadModels().then(() => ui.input.focus());
