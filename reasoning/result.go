package reasoning

import "strings"

// Result is a whole answer split into reasoning and content.
type Result struct {
	// Reasoning is the thinking text without its tags.
	Reasoning string
	// Content is the answer text without the think block.
	Content string
	// HasReasoning reports whether a think block (or analysis message, or
	// Ollama thinking) was present at all. When it is false the response
	// carries no reasoning field.
	HasReasoning bool
}

// Split splits a whole generated text exactly as a [Splitter] fed the same
// text in any chunks would.
func Split(text string, opts ...Option) Result {
	s := NewSplitter(opts...)
	var buf [8]Piece
	pieces := s.Feed(buf[:0], text)
	pieces = s.Flush(pieces)
	return Collect(pieces, s.Seen())
}

// Collect joins pieces into a Result; seen is the splitter's Seen.
func Collect(pieces []Piece, seen bool) Result {
	var r, c strings.Builder
	for _, p := range pieces {
		if p.Kind == Reasoning {
			r.WriteString(p.Text)
		} else {
			c.WriteString(p.Text)
		}
	}
	return Result{Reasoning: r.String(), Content: c.String(), HasReasoning: seen}
}

// FromOllama maps an Ollama chat message's thinking and content fields to a
// Result. Content is split too, so think tags inside it (older Ollama
// versions, or models Ollama does not parse) end up as reasoning as well.
func FromOllama(thinking, content string, opts ...Option) Result {
	s := NewSplitter(opts...)
	var buf [8]Piece
	pieces := s.FeedThinking(buf[:0], thinking)
	pieces = s.Feed(pieces, content)
	pieces = s.Flush(pieces)
	return Collect(pieces, s.Seen())
}

// PromptOpensReasoning reports whether a rendered prompt leaves a think block
// open, so that generation starts inside it: the prompt, without trailing
// whitespace, ends with the open tag (Qwen3 thinking templates and
// DeepSeek-R1 end their generation prompt with "<think>\n"). With
// [WithHarmony] it reports whether the prompt ends inside an analysis
// message.
func PromptOpensReasoning(prompt string, opts ...Option) bool {
	return promptOpens(prompt, newConfig(opts))
}

func promptOpens(prompt string, c config) bool {
	p := strings.TrimRight(prompt, " \t\r\n")
	if c.harmony {
		i := strings.LastIndex(p, HarmonyChannel)
		if i < 0 || !strings.HasSuffix(p, HarmonyMessage) {
			return false
		}
		h := ParseHarmonyHeader(p[i : len(p)-len(HarmonyMessage)])
		return h.Channel == "analysis" && h.Recipient == ""
	}
	return strings.HasSuffix(p, c.open)
}

// AnswerStart says where a constrained answer may begin in the text a
// model generates after prompt, so that its reasoning stays free: until is
// the text after which the answer starts ("" when it starts at the first
// token), and open, when set, makes the reasoning optional — the text
// either opens with open and is free up to until, or is the answer at
// once. With the think tags: the closing tag when the prompt leaves the
// block open; nothing when the prompt ends with the closing tag (the
// template turned thinking off); both tags when the template names the
// opening tag (the model may think first) but the prompt does not open
// the block; nothing otherwise. With [WithHarmony]: the final channel's
// opening, which a harmony answer writes before its text whether or not
// it analyses first, unless the prompt has opened the final message.
func AnswerStart(prompt, templateSource string, opts ...Option) (open, until string) {
	c := newConfig(opts)
	p := strings.TrimRight(prompt, " \t\r\n")
	if c.harmony {
		final := HarmonyChannel + "final" + HarmonyMessage
		if strings.HasSuffix(p, final) {
			return "", ""
		}
		return "", final
	}
	switch {
	case promptOpens(prompt, c):
		return "", c.close
	case strings.HasSuffix(p, c.close): // the template closed it: thinking is off
		return "", ""
	case strings.Contains(templateSource, c.open):
		return c.open, c.close
	}
	return "", ""
}

// CallStart is AnswerStart for an answer that tools are offered to, whose
// constrained part may be a call. With the think tags it is AnswerStart.
// With [WithHarmony] a call is its own message on the commentary channel,
// so the final channel's opening cannot come first: the answer may open
// with one analysis message, free up to its end and the next assistant
// header (<|end|><|start|>assistant), or start at once; when the prompt
// has opened the analysis message, that end comes first.
func CallStart(prompt, templateSource string, opts ...Option) (open, until string) {
	c := newConfig(opts)
	if !c.harmony {
		return AnswerStart(prompt, templateSource, opts...)
	}
	next := HarmonyEnd + HarmonyStart + "assistant"
	if promptOpens(prompt, c) {
		return "", next
	}
	return HarmonyChannel + "analysis" + HarmonyMessage, next
}

// Tags returns the think tags opts select (the defaults unless WithTags
// changes them).
func Tags(opts ...Option) (open, close string) {
	c := newConfig(opts)
	return c.open, c.close
}

// ForTemplate returns the options that fit a model's chat template source:
// WithHarmony for gpt-oss harmony templates, none (the default think tags)
// otherwise.
func ForTemplate(templateSource string) []Option {
	if strings.Contains(templateSource, HarmonyChannel) && strings.Contains(templateSource, HarmonyMessage) {
		return []Option{WithHarmony()}
	}
	return nil
}
