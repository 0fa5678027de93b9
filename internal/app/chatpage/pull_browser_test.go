//go:build cgo

package chatpage_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/prism-local/prism/internal/hubtest"
	"github.com/prism-local/prism/internal/onnxgen"
	"github.com/prism-local/prism/internal/scripted"
)

const pulledAnswer = "Pulled from the hub."

// hubModel writes a scripted model exported as onnx-community does (two
// dtype variants) and serves it from a fake hub under each of names.
func hubModel(t *testing.T, names ...string) *hubtest.Hub {
	t.Helper()
	root := t.TempDir()
	m := scripted.Model{Name: "Hub-ONNX", Answer: pulledAnswer, Configure: func(c *onnxgen.Config) { c.Variants = []string{"fp16", "q4"} }}
	if err := models.Writer(t).Write(t.Context(), root, m); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t)
	for _, n := range names {
		h.AddModel(t, n, filepath.Join(root, m.Name))
	}
	return h
}

// pullDone is true once no pull is in flight.
const pullDone = `!document.querySelector("#pull-start").hidden`

// The page pulls a model named by the person through POST /api/pull, on
// a server started with -pull and -api-key and no model: progress while it
// downloads, then the model in the picker, chosen, and answering. Stop
// ends a pull; a refused pull and one that fails mid-stream show the
// server's error and leave the page usable.
func TestBrowserPull(t *testing.T) {
	h := hubModel(t, "onnx-community/Hub-ONNX", "onnx-community/Second-ONNX", "onnx-community/Broken-ONNX")
	h.Slow(256<<10, 10*time.Millisecond) // slow enough that the progress can be seen moving
	url := launch(t, append(serveEnv(t), "HF_ENDPOINT="+h.URL), "secret", "-device", "cpu", "-pull")
	b := newBrowser(t, url)
	shots := t.ArtifactDir()
	b.do(t, chromedp.Navigate(url+"/"))
	b.wait(t, "the key dialog", `document.querySelector("#key-dialog").open`)
	b.do(t, chromedp.SendKeys(chromedp.ID("key"), "secret\r"))
	b.wait(t, "the empty model list", `document.querySelector("#model").disabled && document.querySelector("#model").textContent.includes("pull one in Settings")`)
	b.do(t, chromedp.Click(chromedp.ID("settings-toggle")))
	b.wait(t, "the pull control", `!document.querySelector("#pull").hidden`)

	pull := func(name string) {
		t.Helper()
		b.setValue(t, "pull-name", name)
		b.do(t, chromedp.Click(chromedp.ID("pull-start")))
	}
	status := func() string { return b.eval(t, `document.querySelector("#pull-status").textContent`) }

	t.Run("success", func(t *testing.T) {
		pull("onnx-community/Hub-ONNX:q4")
		b.wait(t, "progress mid-pull", `(bar => !bar.hidden && bar.value > 0 && bar.value < bar.max)(document.querySelector("#pull-bar"))
			&& document.querySelector("#pull-status").textContent.startsWith("Downloading ")
			&& / of .* · .*\/s · .* left$/.test(document.querySelector("#pull-detail").textContent)`)
		t.Logf("mid-pull: %s | %s", status(), b.eval(t, `document.querySelector("#pull-detail").textContent`))
		b.screenshot(t, shots, "pull-progress.png")
		b.wait(t, "the pull to end", pullDone)
		if got := status(); !strings.HasPrefix(got, "Pulled onnx-community/Hub-ONNX (q4)") || !strings.Contains(got, "onnx-community/Hub-ONNX:q4 is chosen in the model list") {
			t.Fatalf("status after the pull %q; error %q", got, b.eval(t, `document.querySelector("#pull-error").textContent`))
		}
		// The variant named is the one chosen, beside the model as listed.
		if got := b.eval(t, `[...document.querySelector("#model").options].map(o => o.value).join(",") + " " + document.querySelector("#model").value`); got != "onnx-community/Hub-ONNX,onnx-community/Hub-ONNX:q4 onnx-community/Hub-ONNX:q4" {
			t.Errorf("model list and choice after the pull %q", got)
		}
		b.screenshot(t, shots, "pull-done.png")
		b.do(t, chromedp.Click(chromedp.ID("settings-toggle")))
		b.send(t, "onnx-community/Hub-ONNX:q4", "Hi!")
		b.waitDone(t)
		if got := b.text(t, ".body"); got != pulledAnswer {
			t.Errorf("answer of the pulled model %q (error %q)", got, b.text(t, ".error"))
		}
		b.do(t, chromedp.Click(chromedp.ID("settings-toggle")))
	})

	t.Run("stop", func(t *testing.T) {
		pull("onnx-community/Second-ONNX:q4")
		b.wait(t, "the download", `document.querySelector("#pull-status").textContent.startsWith("Downloading ")`)
		b.do(t, chromedp.Click(chromedp.ID("pull-stop")))
		b.wait(t, "the pull to stop", pullDone)
		if got := status(); !strings.HasPrefix(got, "Stopped.") {
			t.Errorf("status after Stop %q", got)
		}
		if got := b.eval(t, `document.querySelector("#pull-detail").textContent`); !strings.HasSuffix(got, " on disk") {
			t.Errorf("detail after Stop %q", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		h.Slow(64<<10, 0)
		pull("onnx-community/Nope")
		b.wait(t, "the refusal", pullDone+` && !document.querySelector("#pull-error").hidden`)
		if got := b.eval(t, `document.querySelector("#pull-error").textContent`); !strings.Contains(got, "model_not_found · HTTP 404") || !strings.Contains(got, "onnx-community/Nope") {
			t.Errorf("unknown repository: %q", got)
		}
		// A failure after the download began ends the stream with an error line.
		h.Corrupt("onnx/model_q4.onnx_data")
		pull("onnx-community/Broken-ONNX:q4")
		b.wait(t, "the failure", pullDone+` && !document.querySelector("#pull-error").hidden`)
		if got := b.eval(t, `document.querySelector("#pull-error").textContent`); !strings.Contains(got, "download_corrupt") || !strings.Contains(got, "model_q4.onnx_data") {
			t.Errorf("corrupt download: %q", got)
		}
		b.screenshot(t, shots, "pull-error.png")
		// The page stays usable: the pulled model still answers.
		b.send(t, "onnx-community/Hub-ONNX:q4", "Hi again!")
		b.waitDone(t)
		if got := b.text(t, ".body"); got != pulledAnswer {
			t.Errorf("answer after the failed pull %q", got)
		}
	})

	t.Run("phone width, dark", func(t *testing.T) {
		b.do(t, chromedp.EmulateViewport(390, 780), dark(true))
		if w := b.eval(t, `String(document.documentElement.scrollWidth)`); w != "390" {
			t.Errorf("page is %spx wide at a 390px viewport", w)
		}
		b.screenshot(t, shots, "pull-phone-dark.png")
	})
	b.check(t)
}
