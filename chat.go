package prism

import (
	"log/slog"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/templates"
)

// LoadChat reads the chat templates and special tokens of the model
// folder model and returns its templates.Chat, the one way to render the
// model's prompts: Chat.Render picks the template for the request, fills
// bos_token and eos_token, renders in the sandbox, and uses the built-in
// format only where the spec allows it (no template, or one that failed,
// on a request without tools; I7, P11), reporting it in the Prompt.
//
// The Chat names model in its logs and errors and logs to logger (nil
// for slog.Default). A template that is refused (it
// does not parse, or uses a construct Prism's evaluator does not cover)
// is not an error here: Chat.Err reports it. A folder that cannot be
// read is an *engine.ModelLoadError. Build the Chat once per model, next
// to the engine Open returns.
func LoadChat(model string, logger *slog.Logger) (*templates.Chat, error) {
	dir, err := resolve(model)
	if err != nil {
		return nil, &engine.ModelLoadError{Model: model, Err: err}
	}
	src, err := templates.ReadTokenizerConfig(dir)
	if err != nil {
		return nil, &engine.ModelLoadError{Model: model, Err: err}
	}
	return templates.NewChat(model, *src, templates.WithLogger(logger)), nil
}
