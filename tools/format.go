package tools

import (
	"slices"
	"strings"

	"github.com/prism-local/prism/reasoning"
)

// Format is a model family's way of writing tool calls in generated text.
type Format uint8

const (
	// FormatNone means no tool-call syntax is known: all text is content.
	FormatNone Format = iota
	// FormatHermes is <tool_call>{"name": …, "arguments": …}</tool_call>
	// (Qwen2.5, Qwen3, Hermes and many fine-tunes).
	FormatHermes
	// FormatLlama3 is Llama 3.x JSON calls: {"name": …, "parameters": …} as
	// the whole answer (several separated by ";"), optionally after
	// <|python_tag|>.
	FormatLlama3
	// FormatMistral is [TOOL_CALLS][{"name": …, "arguments": …}, …], or the
	// newer [TOOL_CALLS]NAME[ARGS]{…}.
	FormatMistral
	// FormatDeepSeekV3 is DeepSeek-V3/R1 tool-call tokens:
	// <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
	// ```json … ```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜> (and V3.1's
	// NAME<｜tool▁sep｜>{…} form).
	FormatDeepSeekV3
	// FormatHarmony is gpt-oss: a commentary message addressed to
	// functions.NAME, <|channel|>commentary to=functions.NAME
	// <|constrain|>json<|message|>{…}<|call|>.
	FormatHarmony
)

// String returns the format's short name ("hermes", "llama3", ...).
func (f Format) String() string {
	switch f {
	case FormatNone:
		return "none"
	case FormatHermes:
		return "hermes"
	case FormatLlama3:
		return "llama3"
	case FormatMistral:
		return "mistral"
	case FormatDeepSeekV3:
		return "deepseek_v3"
	case FormatHarmony:
		return "harmony"
	}
	return "unknown"
}

// ParseFormat returns the Format named s (as String spells it).
func ParseFormat(s string) (Format, bool) {
	for f := FormatNone; f <= FormatHarmony; f++ {
		if f.String() == s {
			return f, true
		}
	}
	return FormatNone, false
}

// Markers of each family, as they appear in chat templates and output.
const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"

	llamaPythonTag = "<|python_tag|>"
	llamaEOM       = "<|eom_id|>"
	llamaEOT       = "<|eot_id|>"

	mistralCalls  = "[TOOL_CALLS]"
	mistralArgs   = "[ARGS]"
	mistralCallID = "[CALL_ID]"

	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"
)

// DetectFormat chooses the tool-call format from a chat template's source,
// by the markers the template writes. It returns FormatNone when the
// template shows none of them.
func DetectFormat(templateSource string) Format {
	t := templateSource
	switch {
	case strings.Contains(t, "<|channel|>") || strings.Contains(t, "<|constrain|>"):
		return FormatHarmony
	case strings.Contains(t, dsCallsBegin) || strings.Contains(t, dsCallBegin) || strings.Contains(t, "<｜Assistant｜>"):
		return FormatDeepSeekV3
	case strings.Contains(t, hermesOpen):
		return FormatHermes
	case strings.Contains(t, mistralCalls) || strings.Contains(t, "[AVAILABLE_TOOLS]"):
		return FormatMistral
	case strings.Contains(t, llamaPythonTag) || strings.Contains(t, "<|start_header_id|>") || strings.Contains(t, "<|eom_id|>"):
		return FormatLlama3
	}
	return FormatNone
}

// DetectFormatFromTokens chooses the format from a tokenizer's special
// (added) tokens, for models that ship no chat template. It returns
// FormatNone when none of the markers is a token.
func DetectFormatFromTokens(tokens []string) Format {
	has := func(s string) bool { return slices.Contains(tokens, s) }
	switch {
	case has("<|channel|>") && has("<|call|>"):
		return FormatHarmony
	case has(dsCallsBegin):
		return FormatDeepSeekV3
	case has(hermesOpen):
		return FormatHermes
	case has(mistralCalls):
		return FormatMistral
	case has(llamaPythonTag) || has("<|start_header_id|>"):
		return FormatLlama3
	}
	return FormatNone
}

// Syntax is how a format writes a list of tool calls, as text, for
// constrained decoding (engine/grammar.CallSyntax has the same fields and
// meaning): Begin, then each call as Open {"name": NAME, ArgsKey: ARGS}
// Close — or, with NameEnd, Open NAME NameEnd ARGS Close, the name raw —
// with Sep between calls, then End. Trigger is the marker that opens the
// calls; WholeAnswer means the calls are the whole answer (Llama 3).
// Tokens are the markers that are single special tokens, which a grammar
// matches by token id; Guard is text free text must not hold outside a
// call (harmony's "to=", which addresses a message to a tool);
// ContentBegin opens an answer that is a value instead of calls (harmony's
// final channel).
type Syntax struct {
	Trigger, Begin, End, Open, Close, Sep, ArgsKey string
	WholeAnswer                                    bool
	Tokens                                         []string
	NameEnd, Guard, ContentBegin                   string
}

// Syntax returns the call syntax of f, as the chat templates write it
// (docs/structured-outputs.md has the table); ok is false for FormatNone.
// DeepSeek-V3 calls are written in the template's form, one per
// <｜tool▁call▁begin｜>, separated by a newline; harmony calls as a
// commentary message to functions.NAME with a json constraint, ended by
// <|call|>, the next one after <|start|>assistant.
func (f Format) Syntax() (s Syntax, ok bool) {
	switch f {
	case FormatHermes:
		return Syntax{Trigger: hermesOpen, Open: hermesOpen, Close: hermesClose, ArgsKey: "arguments"}, true
	case FormatLlama3:
		return Syntax{Sep: ";", ArgsKey: "parameters", WholeAnswer: true}, true
	case FormatMistral:
		return Syntax{Trigger: mistralCalls, Begin: mistralCalls + "[", End: "]", Sep: ",", ArgsKey: "arguments"}, true
	case FormatDeepSeekV3:
		return Syntax{Trigger: dsCallsBegin, Begin: dsCallsBegin, End: dsCallsEnd, Open: dsCallBegin + "function" + dsSep,
			NameEnd: "\n```json\n", Close: "\n```" + dsCallEnd, Sep: "\n",
			Tokens: []string{dsCallsBegin, dsCallsEnd, dsCallBegin, dsCallEnd, dsSep}}, true
	case FormatHarmony:
		open := reasoning.HarmonyChannel + "commentary to=functions."
		return Syntax{Trigger: open, Open: open, NameEnd: " " + reasoning.HarmonyConstrain + "json" + reasoning.HarmonyMessage,
			Close: reasoning.HarmonyCall, Sep: reasoning.HarmonyStart + "assistant", Guard: "to=",
			ContentBegin: reasoning.HarmonyChannel + "final" + reasoning.HarmonyMessage,
			Tokens: []string{reasoning.HarmonyStart, reasoning.HarmonyChannel, reasoning.HarmonyMessage, reasoning.HarmonyConstrain,
				reasoning.HarmonyEnd, reasoning.HarmonyCall, reasoning.HarmonyReturn}}, true
	}
	return Syntax{}, false
}
