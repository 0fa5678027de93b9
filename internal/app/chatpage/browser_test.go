//go:build cgo

package chatpage_test

// The page in a real headless Chromium, served by the built examples/serve
// binary over scripted generator models on the real ONNX Runtime: what a
// person sees, checked through the DOM, and what the server did, checked
// through /health and /metrics.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/prism-local/prism/internal/app/wire"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/internal/scripted"
	"github.com/prism-local/prism/internal/testproc"
)

const (
	thinkAnswer = "<think>\nThe user greets me.\n</think>\n\nHello there, friend. Here is `code`:\n```go\nfmt.Println(\"hi\")\n```"
	toolAnswer  = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	// slowCount is how far the "slow" model counts: long enough that Stop
	// lands mid-answer.
	slowCount = 400
)

// countAnswer is a long answer with no repeating cycle (the loop guard
// leaves it alone).
func countAnswer(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d, ", i)
	}
	return b.String() + "done."
}

// models are the scripted models think, tool and slow (the real Qwen3
// tokenizer and chat template), written once for the package's tests.
var models = scripted.Folder{Models: []scripted.Model{
	{Name: "think", Answer: thinkAnswer, Context: 512},
	{Name: "tool", Answer: toolAnswer, Context: 512},
	{Name: "slow", Answer: countAnswer(slowCount)}, // 256 positions past its script
}}

// serveBinary is the built examples/serve binary, started as a user starts
// it: built once per test binary, as examples/serve's own tests build it.
var serveBinary = testproc.Binary{Package: "github.com/prism-local/prism/examples/serve"}

func TestMain(m *testing.M) {
	code := m.Run()
	serveBinary.Remove()
	models.Remove()
	os.Exit(code)
}

var servingLine = regexp.MustCompile(`msg=serving url=(http://\S+)/v1`)

// serveEnv is the environment of the binary: this one without its PRISM_*
// settings, a private PRISM_HOME and an empty Hugging Face cache, so
// nothing of the machine leaks in.
func serveEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return append(testproc.Environ("PRISM_", "HF_"), "PRISM_ORT_LIB="+fixtures.ORTLib(t), "PRISM_HOME="+home, "HF_HUB_CACHE="+filepath.Join(home, "hub"))
}

// startServer runs the binary on a free loopback port over the models
// under dir on device ("auto" runs on the CPU here, where no NVIDIA GPU is), with
// apiKey ("" for none), and waits until /health answers. The binary must
// run until t ends, then exit 0 on SIGTERM.
func startServer(t *testing.T, dir, device, apiKey string) string {
	t.Helper()
	return launch(t, serveEnv(t), apiKey, "-device", device, "-models-dir", dir)
}

// launch runs the binary with env and args (besides its address, Ollama
// off and apiKey) as startServer does.
func launch(t *testing.T, env []string, apiKey string, args ...string) string {
	t.Helper()
	args = append([]string{"-addr", "127.0.0.1:0", "-ollama", "off"}, args...)
	if apiKey != "" {
		args = append(args, "-api-key", apiKey)
	}
	cmd := exec.Command(serveBinary.Path(t), args...)
	cmd.Env = env
	p := testproc.Start(t, cmd)
	m, err := p.WaitLine(servingLine, 2*time.Minute)
	if err != nil {
		t.Fatalf("serve did not start serving: %v", err)
	}
	t.Cleanup(func() {
		early := p.Exited()
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); early {
			t.Errorf("serve exited before the test ended: %v", err)
		} else if err != nil {
			t.Errorf("stopping serve: %v\n%s", err, p.Stderr())
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", p.Stderr())
		}
	})
	url := m[1]
	var header http.Header
	if apiKey != "" {
		header = http.Header{"Authorization": {"Bearer " + apiKey}}
	}
	if err := p.WaitHTTP(t.Context(), url+"/health", header, time.Minute); err != nil {
		t.Fatal(err)
	}
	return url
}

// browser is one headless Chromium tab and what it reported.
type browser struct {
	ctx    context.Context
	origin string

	mu       sync.Mutex
	requests []string // every URL the page asked for
	problems []string // exceptions, console errors and CSP reports
}

func newBrowser(t *testing.T, origin string) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/chromium"); serr != nil {
			fixtures.Unavailable(t, "chromium (Debian's package chromium): %v", err)
		}
		path = "/usr/bin/chromium"
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		// Without these Chromium reaches out to Google's services at start,
		// which this machine's network refuses.
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1100, 760),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelTime)
	b := &browser{ctx: ctx, origin: origin}
	if err := chromedp.Listen(ctx, b.event); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func (b *browser) event(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	case *runtime.EventExceptionThrown:
		b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Text+" "+describe(e.ExceptionDetails.Exception))
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			var args []string
			for _, a := range e.Args {
				args = append(args, describe(a))
			}
			b.problems = append(b.problems, "console.error: "+strings.Join(args, " "))
		}
	case *cdplog.EventEntryAdded:
		// Refused requests and CSP violations land here. A 4xx or 5xx the
		// page asked for on purpose is not a problem; the page shows it.
		if e.Entry.Level == cdplog.EntryLevelError && e.Entry.Source != cdplog.EntrySourceNetwork {
			b.problems = append(b.problems, fmt.Sprintf("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Value)
}

// check fails t for any request that left the server's origin and any
// problem the page reported.
func (b *browser) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		t.Error("no request seen: the network events are not arriving")
	}
	for _, u := range b.requests {
		if !strings.HasPrefix(u, b.origin+"/") {
			t.Errorf("request left the server's origin %s: %s", b.origin, u)
		}
	}
	for _, p := range b.problems {
		t.Errorf("page problem: %s", p)
	}
}

func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// wait polls a JavaScript condition until it holds.
func (b *browser) wait(t *testing.T, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(20*time.Millisecond),
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v\nlast answer: %s", what, cond, err, b.eval(t, `(document.querySelector(".msg.assistant:last-of-type")||{}).innerText||""`))
	}
}

func (b *browser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// send types a message into the composer and presses Enter.
func (b *browser) send(t *testing.T, model, text string) {
	t.Helper()
	b.setValue(t, "model", model)
	b.do(t, chromedp.Focus(chromedp.ID("input")))
	if len(text) > 200 {
		b.setValue(t, "input", text)
	} else {
		b.do(t, chromedp.SendKeys(chromedp.ID("input"), text))
	}
	b.do(t, enter)
}

// enter presses Enter as a keyboard does: one keydown that carries the
// text, which the page's preventDefault keeps out of the field (SendKeys
// sends a separate char event that would land in it anyway).
func enter(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
	key := input.DispatchKeyEventParams{Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
	down, up := key, key
	down.Type, down.Text, down.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, "\r", "\r"
	up.Type = input.DispatchKeyEventTypeKeyUp
	if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, down); err != nil {
		return chromedp.Void{}, err
	}
	_, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, up)
	return chromedp.Void{}, err
}

// setValue sets a form field as a person's typing would leave it.
func (b *browser) setValue(t *testing.T, id, value string) {
	t.Helper()
	b.eval(t, fmt.Sprintf(`(n => { n.value = %s; n.dispatchEvent(new Event("input")); return n.value })(document.getElementById(%q))`,
		strconv.Quote(value), id))
}

// lastAnswer is the last assistant message once it is done.
const lastAnswer = `[...document.querySelectorAll("#log > .msg.assistant")].pop()`

func (b *browser) waitDone(t *testing.T) {
	t.Helper()
	b.wait(t, "the answer to finish", `(a => a && !a.classList.contains("pending") && !!a.querySelector(".stats .finish"))(`+lastAnswer+`)`)
}

func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	return b.eval(t, `(n => n ? n.textContent : "<missing>")(`+lastAnswer+`.querySelector(`+strconv.Quote(sel)+`))`)
}

func TestBrowser(t *testing.T) {
	dir := models.Path(t)
	url := startServer(t, dir, "auto", "")
	b := newBrowser(t, url)
	shots := t.ArtifactDir()
	t.Logf("screenshots go to %s (kept with go test -artifacts)", shots)

	b.do(t, chromedp.Navigate(url+"/"))
	b.wait(t, "the models", `document.querySelector("#model").options.length === 3 && !document.querySelector("#model").disabled`)
	if got := b.eval(t, `[...document.querySelector("#model").options].map(o => o.value).join(",")`); got != "slow,think,tool" {
		t.Errorf("model picker offers %q", got)
	}
	b.wait(t, "the health line", `document.querySelector("#health").textContent.includes("queue 0/")`)
	// Started without -pull: nothing about pulling is shown.
	if got := b.eval(t, `String(document.querySelector("#pull").hidden)`); got != "true" {
		t.Error("the pull control is shown by a server that does not serve POST /api/pull")
	}

	t.Run("answer and reasoning", func(t *testing.T) {
		b.send(t, "think", "Hi!")
		// Streamed: the reasoning shows before the answer is complete.
		b.wait(t, "the reasoning to stream", lastAnswer+`.querySelector(".thoughts").textContent.includes("greets")`)
		b.waitDone(t)
		if got := strings.TrimSpace(b.text(t, ".body")); got != "Hello there, friend. Here is code:\nfmt.Println(\"hi\")" {
			t.Errorf("answer %q", got)
		}
		if got := b.eval(t, lastAnswer+`.querySelector(".body pre code").textContent`); got != "fmt.Println(\"hi\")\n" {
			t.Errorf("code block %q", got)
		}
		if got := strings.TrimSpace(b.text(t, ".thoughts")); got != "The user greets me." {
			t.Errorf("reasoning %q", got)
		}
		if open := b.eval(t, `String(`+lastAnswer+`.querySelector("details.reasoning").open)`); open != "false" {
			t.Error("reasoning is not collapsed by default")
		}
		stats := b.text(t, ".stats")
		for _, want := range []string{"TTFT ", " tok/s", " tokens", "finish stop"} {
			if !strings.Contains(stats, want) {
				t.Errorf("stats %q lack %q", stats, want)
			}
		}
		// The device and any fallback reason, exactly as /health says them.
		h := waitIdle(t, url)
		b.do(t, chromedp.Evaluate[chromedp.Void](`refreshHealth()`))
		b.wait(t, "the health line", `document.querySelector("#health").textContent.includes(`+strconv.Quote("think on "+strings.ToUpper(h.Device)+" · idle")+`)`)
		fallback := b.eval(t, `(n => n.hidden ? "" : n.textContent)(document.querySelector("#fallback"))`)
		if want := strings.ToUpper(h.Device) + " — " + h.FallbackReason; (h.FallbackReason == "" && fallback != "") || (h.FallbackReason != "" && fallback != want) {
			t.Errorf("fallback shown %q; /health says device %q, reason %q", fallback, h.Device, h.FallbackReason)
		}
		t.Logf("health line: %s; fallback: %s", b.eval(t, `document.querySelector("#health").textContent`), fallback)
		b.screenshot(t, shots, "chat.png")
		b.do(t, chromedp.Click(chromedp.CSS("#log > .msg.assistant:last-of-type details.reasoning summary")))
		b.screenshot(t, shots, "chat-reasoning.png")
	})

	t.Run("error", func(t *testing.T) {
		long := strings.TrimSpace(strings.Repeat("word ", 800))
		b.send(t, "think", long)
		b.wait(t, "the error", lastAnswer+`.querySelector(".error:not([hidden])")`)
		if got := b.text(t, ".error"); !strings.Contains(got, "context_length_exceeded") || !strings.Contains(got, "HTTP 400") {
			t.Errorf("error shown %q", got)
		}
		if got := b.eval(t, `String([...document.querySelectorAll("#log > .msg.user")].pop().classList.contains("failed"))`); got != "true" {
			t.Error("the refused message is not marked failed")
		}
		if got := b.eval(t, `document.querySelector("#input").value`); got != long {
			t.Errorf("the refused text is not back in the composer (%d chars)", len(got))
		}
		b.screenshot(t, shots, "error.png")
		// The page stays usable: the next message is answered.
		b.setValue(t, "input", "")
		b.send(t, "think", "Hi again!")
		b.waitDone(t)
		if got := b.text(t, ".body"); !strings.HasPrefix(got, "Hello there, friend.") {
			t.Errorf("answer after the error %q", got)
		}
	})

	t.Run("phone width, dark", func(t *testing.T) {
		b.do(t, chromedp.Click(chromedp.ID("new-chat")), chromedp.EmulateViewport(390, 780), dark(true))
		b.send(t, "think", "Hi!")
		b.waitDone(t)
		if w := b.eval(t, `String(document.documentElement.scrollWidth)`); w != "390" {
			t.Errorf("page is %spx wide at a 390px viewport", w)
		}
		if bg := b.eval(t, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(19, 19, 22)" {
			t.Errorf("dark background %q", bg)
		}
		b.screenshot(t, shots, "phone-dark.png")
		b.do(t, dark(false), chromedp.EmulateViewport(1100, 760))
	})

	t.Run("stop", func(t *testing.T) {
		tok := models.Writer(t)
		slowTokens := len(tok.Encode(countAnswer(slowCount)))
		before := metric(t, url, "prism_completion_tokens_total")
		b.send(t, "slow", "Count for me.")
		b.wait(t, "the first numbers", lastAnswer+`.querySelector(".body").textContent.includes("3, 4, ")`)
		b.do(t, chromedp.Click(chromedp.ID("stop")))
		b.waitDone(t)
		if stats := b.text(t, ".stats"); !strings.Contains(stats, "finish stopped") {
			t.Errorf("stats after Stop %q", stats)
		}
		body := b.text(t, ".body")
		if !strings.HasPrefix(countAnswer(slowCount), body) {
			t.Errorf("stopped answer %q is not a start of the script", body)
		}
		shown := len(tok.Encode(body))
		h := waitIdle(t, url)
		if h.QueueDepth != 0 || h.Busy {
			t.Errorf("health after Stop %+v", h)
		}
		if busy := metric(t, url, "prism_engine_busy"); busy != 0 {
			t.Errorf("prism_engine_busy %v after Stop", busy)
		}
		if q := metric(t, url, "prism_queue_depth"); q != 0 {
			t.Errorf("prism_queue_depth %v after Stop", q)
		}
		generated := int(metric(t, url, "prism_completion_tokens_total") - before)
		t.Logf("Stop: the page showed %d tokens; the server generated %d of %d", shown, generated, slowTokens)
		// Stopped, not run to the end: the server counts the tokens it
		// generated, and the page cannot have shown more than those.
		if generated >= slowTokens || generated < shown {
			t.Errorf("the generation was not stopped by the page: %d of %d tokens generated, %d shown", generated, slowTokens, shown)
		}
		// The binary does not say when it saw the page leave, so the bound
		// is looser than internal/app/server's one token (TestDisconnectMidStream):
		// the tokens in flight to the page when it left, and the one the
		// server was computing.
		if over := generated - shown; over > 64 {
			t.Errorf("the server generated %d tokens past the %d the page showed", over, shown)
		}
	})

	t.Run("tool call", func(t *testing.T) {
		b.do(t, chromedp.Click(chromedp.ID("new-chat")))
		if n := b.eval(t, `String(document.querySelectorAll("#log .msg").length)`); n != "0" {
			t.Errorf("new chat left %s messages", n)
		}
		b.do(t, chromedp.Click(chromedp.ID("settings-toggle")))
		b.setValue(t, "tools", `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`)
		b.send(t, "tool", "Weather in Paris?")
		b.waitDone(t)
		if got := b.text(t, ".call .name"); got != "get_weather" {
			t.Errorf("call name %q", got)
		}
		var args map[string]string
		if err := json.Unmarshal([]byte(b.text(t, ".call .args")), &args); err != nil || args["city"] != "Paris" {
			t.Errorf("call arguments %q: %v", b.text(t, ".call .args"), err)
		}
		if body := b.text(t, ".body"); strings.Contains(body, "tool_call") {
			t.Errorf("raw tool-call markup shown: %q", body)
		}
		if stats := b.text(t, ".stats"); !strings.Contains(stats, "finish tool_calls") {
			t.Errorf("stats %q", stats)
		}
		b.do(t, chromedp.Click(chromedp.ID("settings-toggle")))
		b.screenshot(t, shots, "tool-call.png")
		// A result goes back as a tool message and the model answers again.
		b.do(t, chromedp.SendKeys(chromedp.CSS(".call form input"), "18 C, sunny\r"))
		b.wait(t, "the answer after the result", `document.querySelectorAll("#log > .msg.assistant").length === 2`)
		b.waitDone(t)
		if got := b.text(t, ".error"); got != "" {
			t.Errorf("continuing after the tool result: %q", got)
		}
		b.setValue(t, "tools", "")
	})

	b.check(t)
}

func dark(on bool) chromedp.Action[chromedp.Void] {
	v := "light"
	if on {
		v = "dark"
	}
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
		return chromedp.Void{}, err
	}
}

func TestBrowserAPIKey(t *testing.T) {
	dir := models.Path(t)
	url := startServer(t, dir, "cpu", "secret")
	b := newBrowser(t, url)
	b.do(t, chromedp.Navigate(url+"/"))
	b.wait(t, "the key dialog", `document.querySelector("#key-dialog").open`)
	b.do(t, chromedp.SendKeys(chromedp.ID("key"), "wrong\r"))
	b.wait(t, "the refusal", `document.querySelector("#key-dialog").open && !document.querySelector("#key-error").hidden`)
	b.screenshot(t, t.ArtifactDir(), "api-key.png")
	if got := b.eval(t, `document.querySelector("#key-error").textContent`); !strings.Contains(got, "refused") {
		t.Errorf("wrong key: %q", got)
	}
	b.setValue(t, "key", "")
	b.do(t, chromedp.SendKeys(chromedp.ID("key"), "secret\r"))
	b.wait(t, "the models", `document.querySelector("#model").options.length === 3 && !document.querySelector("#key-dialog").open`)
	b.send(t, "think", "Hi!")
	b.waitDone(t)
	if got := b.text(t, ".body"); !strings.HasPrefix(got, "Hello there, friend.") {
		t.Errorf("answer with a key %q", got)
	}
	b.check(t)
}

// waitIdle polls /health until no generation runs.
func waitIdle(t *testing.T, url string) wire.Health {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var h wire.Health
		resp, err := http.Get(url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !h.Busy && h.QueueDepth == 0 {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("the generation did not end after Stop: %+v", h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric reads one unlabelled value from /metrics.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	v, ok := readMetric(t, url, name)
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	return v
}

// attackPage is a page of another local origin that tries every request
// a page can send without a preflight against the server's drain, unload
// and chat: a no-cors fetch, a form POST into a frame and a beacon.
const attackPage = `<!doctype html><html><body><script>
const server = %q;
const chat = JSON.stringify({model: "think", messages: [{role: "user", content: "hi"}], max_tokens: 2});
const targets = ["/v1/drain", "/v1/unload", "/v1/chat/completions"];
const pending = [];
for (const path of targets) {
  pending.push(fetch(server + path, {method: "POST", mode: "no-cors", headers: {"Content-Type": "application/json"}, body: chat}).catch(() => {}));
  const frame = document.createElement("iframe");
  frame.name = "f" + path.replaceAll("/", "_");
  document.body.appendChild(frame);
  pending.push(new Promise(done => frame.addEventListener("load", done, {once: true})));
  const form = document.createElement("form");
  form.method = "POST"; form.action = server + path; form.target = frame.name; form.enctype = "text/plain";
  const field = document.createElement("input");
  field.name = '{"model":"think","x":"'; field.value = '"}';
  form.appendChild(field);
  document.body.appendChild(form);
  form.submit();
  window.beacons = (window.beacons || 0) + (navigator.sendBeacon(server + path, chat) ? 1 : 0);
}
Promise.all(pending).then(() => { window.done = true; });
</script></body></html>`

// A page the user visits on another local origin cannot drive the server
// (docs/api.md, "Web pages"): every request arrives and is refused, the
// server keeps serving with its model resident, and no generation runs.
func TestBrowserForeignPage(t *testing.T) {
	dir := models.Path(t)
	url := startServer(t, dir, "cpu", "")
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"think","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up chat: %s", resp.Status)
	}
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, attackPage, url)
	}))
	t.Cleanup(attacker.Close)

	b := newBrowser(t, attacker.URL)
	b.do(t, chromedp.Navigate(attacker.URL+"/"))
	b.wait(t, "the page's requests", `window.done === true`)
	if got := b.eval(t, `String(window.beacons)`); got != "3" {
		t.Errorf("%s beacons queued, want 3", got)
	}
	// Beacons are sent after the page moves on; wait until the server has
	// refused all nine requests.
	endpoints := []string{"POST /v1/drain", "POST /v1/unload", "POST /v1/chat/completions"}
	deadline := time.Now().Add(30 * time.Second)
	for _, e := range endpoints {
		name := fmt.Sprintf(`prism_http_requests_total{endpoint=%q,status="403"}`, e)
		for metricOr0(t, url, name) < 3 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if got := metricOr0(t, url, name); got != 3 {
			t.Errorf("%s: %v requests refused, want 3 (no-cors fetch, form, beacon)", e, got)
		}
	}
	h := waitIdle(t, url)
	if h.Model != "think" {
		t.Errorf("the model is no longer resident: %+v", h)
	}
	if got := metricOr0(t, url, `prism_http_requests_total{endpoint="POST /v1/chat/completions",status="200"}`); got != 1 {
		t.Errorf("%v chats answered, want only the warm-up", got)
	}
}

// metricOr0 reads one value from /metrics, 0 while the series is absent.
func metricOr0(t *testing.T, url, name string) float64 {
	t.Helper()
	v, _ := readMetric(t, url, name)
	return v
}

func readMetric(t *testing.T, url, name string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f, true
		}
	}
	return 0, false
}

// The first screen says in one line when the chosen model is the built-in
// demo, and not for another model.
func TestBrowserDemoNote(t *testing.T) {
	root := t.TempDir()
	w := models.Writer(t)
	for _, m := range []scripted.Model{{Name: "demo-model", Answer: "Hello."}, {Name: "other", Answer: "Hi."}} {
		if err := w.Write(t.Context(), root, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "demo-model", modelfolder.DemoMarkerFile), []byte("demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServer(t, root, "cpu", "")
	b := newBrowser(t, url)
	b.do(t, chromedp.Navigate(url+"/"))
	b.wait(t, "the models", `document.querySelector("#model").options.length === 2 && !document.querySelector("#model").disabled`)
	b.setValue(t, "model", "demo-model")
	b.eval(t, `(document.querySelector("#model").dispatchEvent(new Event("change")), "")`)
	b.wait(t, "the demo note", `!document.querySelector("#demo-note").hidden`)
	if got := b.eval(t, `document.querySelector("#demo-note").textContent`); !strings.Contains(got, "built-in demo model") || !strings.Contains(got, "-pull -model") {
		t.Errorf("demo note %q", got)
	}
	b.screenshot(t, t.ArtifactDir(), "demo-note.png")
	b.setValue(t, "model", "other")
	b.eval(t, `(document.querySelector("#model").dispatchEvent(new Event("change")), "")`)
	b.wait(t, "no demo note", `document.querySelector("#demo-note").hidden`)
	b.check(t)
}
