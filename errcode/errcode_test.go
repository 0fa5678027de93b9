package errcode_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/grammar"
	"github.com/prism-local/prism/engine/onnx"
	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/templates"
	"github.com/prism-local/prism/tools"
)

// TestOfEveryPackage reads the code of an error from each package that
// returns typed errors, bare, wrapped with %w and inside errors.Join. The
// errors come from the packages' own functions where one fails cheaply
// and deterministically, and are built by hand otherwise.
func TestOfEveryPackage(t *testing.T) {
	_, onnxErr := onnx.Open(t.Context(), filepath.Join(t.TempDir(), "nope"), onnx.Options{})
	_, tokErr := tokenizer.Load(t.TempDir())
	tmplErr := templates.NewChat("m", templates.ChatTemplates{Named: map[string]string{"default": "{% if %}"}}).Err()
	_, toolsErr := tools.ParseChoice(json.RawMessage(`42`))
	_, configErr := config.Load([]string{"PRISM_DEVICE=tpu"})
	_, envFileErr := config.ParseEnvFile([]byte("no equals sign"))
	cases := []struct {
		pkg  string
		err  error
		want string
	}{
		{"engine", (&engine.Request{Prompt: "x", Temperature: 3}).Validate(), errcode.InvalidRequest},
		{"engine", &engine.ServerBusyError{Reason: "queue full", RetryAfter: time.Second}, errcode.ServerBusy},
		{"engine", engine.ErrClosed, errcode.EngineClosed},
		{"engine", &engine.ModelLoadError{Model: "m", Err: &resources.InsufficientResourcesError{}}, errcode.InsufficientResources},
		{"engine/onnx", onnxErr, errcode.ModelLoadFailed},
		{"engine/onnx", &onnx.DeviceError{Device: onnx.DeviceCUDA, Cause: "no GPU"}, errcode.ModelLoadFailed},
		{"engine/onnx", &onnx.GraphError{Graph: "/m/model.onnx", Msg: "no input"}, errcode.ModelLoadFailed},
		{"engine/onnx", &onnx.ConfigError{File: "/m/config.json", Err: io.ErrUnexpectedEOF}, errcode.ModelLoadFailed},
		{"engine/onnx", &onnx.MissingFileError{Path: "/m/config.json"}, errcode.ModelLoadFailed},
		{"engine/onnx", &onnx.StepError{Graph: "/m/model.onnx", Pos: 3, Tokens: 2, Msg: "onnx runtime"}, errcode.InferenceFailed},
		{"engine/tokenizer", tokErr, errcode.ModelLoadFailed},
		{"engine/grammar", &grammar.SchemaError{Param: "response_format", Keyword: "pattern", Message: "not enforced"}, errcode.InvalidRequest},
		{"lock", &lock.TimeoutError{Model: "m", Path: "/tmp/l", Waited: time.Second}, errcode.LoadLockTimeout},
		{"resources", &resources.InsufficientResourcesError{}, errcode.InsufficientResources},
		{"templates", tmplErr, errcode.TemplateRenderFailed},
		{"templates", &templates.TemplateRenderError{Model: "m", Err: tmplErr}, errcode.TemplateRenderFailed},
		{"tools", toolsErr, errcode.InvalidRequest},
		{"internal/config", configErr, errcode.InvalidSetting},
		{"internal/config", envFileErr, errcode.InvalidSetting},
		{"signals", signals.StoreError("drain", io.EOF), errcode.StoreFailed},
		{"signals", signals.ErrNotFound, errcode.NotFound},
		{"outside Prism", io.EOF, ""},
		{"nil", nil, ""},
	}
	for _, c := range cases {
		if c.want != "" && c.err == nil {
			t.Fatalf("%s: the error to test is nil", c.pkg)
		}
		forms := map[string]error{
			"bare":       c.err,
			"%w":         fmt.Errorf("serve request: %w", c.err),
			"Join":       errors.Join(errors.New("first"), c.err),
			"%w of Join": fmt.Errorf("outer: %w", errors.Join(c.err, io.ErrClosedPipe)),
		}
		for form, err := range forms {
			if c.err == nil && form != "bare" {
				continue
			}
			if got := errcode.Of(err); got != c.want {
				t.Errorf("%s %T %s: Of = %q, want %q (%v)", c.pkg, c.err, form, got, c.want, err)
			}
		}
	}
}

// TestOfFirstInTree: with two coded errors in one tree, Of reads the one
// errors.As meets first, depth first, so a wrapper's own code wins over
// its cause's.
func TestOfFirstInTree(t *testing.T) {
	busy := &engine.ServerBusyError{Reason: "queue full"}
	joined := errors.Join(busy, signals.ErrNotFound)
	if got := errcode.Of(joined); got != errcode.ServerBusy {
		t.Errorf("Of(Join(busy, not found)) = %q, want server_busy", got)
	}
	tre := &templates.TemplateRenderError{Model: "m", Err: &engine.InvalidRequestError{Param: "tools"}}
	if got := errcode.Of(tre); got != errcode.TemplateRenderFailed {
		t.Errorf("Of(TemplateRenderError) = %q, want template_render_failed", got)
	}
}

type paramErr struct{ p string }

func (e paramErr) Error() string     { return "bad " + e.p }
func (e paramErr) ParamName() string { return e.p }

func TestParam(t *testing.T) {
	err := fmt.Errorf("stream: %w", errors.Join(errors.New("other"), paramErr{"top_p"}))
	if got := errcode.Param(err); got != "top_p" {
		t.Errorf("Param = %q, want top_p", got)
	}
	if got := errcode.Param(errors.New("plain")); got != "" {
		t.Errorf("Param of a plain error = %q", got)
	}
}
