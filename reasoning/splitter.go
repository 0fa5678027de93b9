package reasoning

import (
	"strings"
	"unicode/utf8"
)

// Kind says which part of the answer a [Piece] belongs to.
type Kind uint8

const (
	// Content is answer text (OpenAI's message.content).
	Content Kind = iota + 1
	// Reasoning is thinking text (OpenAI-compatible reasoning_content).
	Reasoning
)

// String returns "content" or "reasoning".
func (k Kind) String() string {
	switch k {
	case Content:
		return "content"
	case Reasoning:
		return "reasoning"
	}
	return "unknown"
}

// Piece is a run of output text of one kind. Text is never empty.
type Piece struct {
	Kind Kind
	Text string
}

// DefaultOpen and DefaultClose are the think tags Qwen3 and DeepSeek-R1 use.
const (
	DefaultOpen  = "<think>"
	DefaultClose = "</think>"
)

// Option configures a [Splitter], [Split] and [PromptOpensReasoning].
type Option func(*config)

type config struct {
	open, close string
	harmony     bool
	start       bool
	prompt      *string
}

// WithTags sets the tags that open and close a think block. Both must be
// non-empty; otherwise the defaults stay.
func WithTags(open, close string) Option {
	return func(c *config) {
		if open != "" && close != "" {
			c.open, c.close = open, close
		}
	}
}

// WithHarmony selects gpt-oss harmony channels instead of think tags.
func WithHarmony() Option { return func(c *config) { c.harmony = true } }

// WithReasoningStart makes the splitter begin inside a think block (or, with
// harmony, inside an analysis message): use it when the prompt already opened
// the block. [WithPrompt] decides this from the prompt itself.
func WithReasoningStart(open bool) Option { return func(c *config) { c.start = open } }

// WithPrompt makes the splitter begin inside a think block exactly when
// [PromptOpensReasoning] says the rendered prompt left one open.
func WithPrompt(prompt string) Option { return func(c *config) { c.prompt = &prompt } }

func newConfig(opts []Option) config {
	c := config{open: DefaultOpen, close: DefaultClose}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.prompt != nil {
		c.start = promptOpens(*c.prompt, c)
	}
	return c
}

// Splitter separates reasoning from content in a stream of text pieces.
// Create one per generated answer with [NewSplitter]; it is not safe for
// concurrent use.
type Splitter struct {
	open, close string
	harmony     bool

	inReasoning bool
	seen        bool
	matched     int // bytes of the current tag seen at the end of earlier input

	held     [utf8.UTFMax]byte // an unfinished UTF-8 sequence at the end of the output
	heldN    int
	heldKind Kind

	h harmonyState
}

// NewSplitter returns a splitter for one answer.
func NewSplitter(opts ...Option) *Splitter {
	c := newConfig(opts)
	s := &Splitter{open: c.open, close: c.close, harmony: c.harmony}
	if c.start {
		s.inReasoning = true
		s.seen = true
		if s.harmony {
			s.h.state = hBody
			s.h.kind = Reasoning
		}
	}
	return s
}

// Seen reports whether any reasoning was seen so far: a think block opened
// (even an empty one), an analysis message, or thinking fed by FeedThinking.
// When it is false at the end the answer has no reasoning field.
func (s *Splitter) Seen() bool { return s.seen }

// Held returns how many bytes of the text fed so far the splitter holds
// back undecided: a possible tag or marker, a harmony header, an unfinished
// character. The pieces handed out so far were read from the text before
// them, which lets a caller tell where they came from.
func (s *Splitter) Held() int {
	if s.harmony {
		return s.heldN + len(s.h.buf)
	}
	return s.heldN + s.matched
}

// InReasoning reports whether the splitter is currently inside a think block
// (or a harmony analysis message).
func (s *Splitter) InReasoning() bool {
	if s.harmony {
		return s.h.state == hBody && s.h.kind == Reasoning
	}
	return s.inReasoning
}

// Feed splits chunk and appends the resulting pieces to dst, returning the
// extended slice. The pieces' texts are substrings of chunk wherever possible;
// bytes that may belong to a tag or to an unfinished character are held back
// until later input (or Flush) decides them. Reusing dst between calls makes
// Feed allocation-free in steady state.
func (s *Splitter) Feed(dst []Piece, chunk string) []Piece {
	if s.harmony {
		return s.feedHarmony(dst, chunk)
	}
	return s.feedTags(dst, chunk)
}

// FeedThinking appends thinking text that arrived already separated (for
// example an Ollama message.thinking delta) as reasoning.
func (s *Splitter) FeedThinking(dst []Piece, thinking string) []Piece {
	if thinking == "" {
		return dst
	}
	s.seen = true
	return s.emit(dst, Reasoning, thinking)
}

// Flush ends the stream: bytes held back as a possible tag are released as
// text of the current kind (a tag that never finished is not a tag), and an
// unfinished character is released as it is. An unclosed think block stays
// reasoning.
func (s *Splitter) Flush(dst []Piece) []Piece {
	if s.harmony {
		dst = s.flushHarmony(dst)
	} else if s.matched > 0 {
		tag := s.open
		k := Content
		if s.inReasoning {
			tag, k = s.close, Reasoning
		}
		dst = s.emit(dst, k, tag[:s.matched])
		s.matched = 0
	}
	return s.releaseHeld(dst)
}

func (s *Splitter) feedTags(dst []Piece, chunk string) []Piece {
	for len(chunk) > 0 {
		tag, kind := s.open, Content
		if s.inReasoning {
			tag, kind = s.close, Reasoning
		}
		if s.matched > 0 {
			rest := tag[s.matched:]
			n := min(len(rest), len(chunk))
			if chunk[:n] == rest[:n] {
				if n < len(rest) {
					s.matched += n
					return dst
				}
				s.matched = 0
				chunk = chunk[n:]
				s.toggle()
				continue
			}
			// The held bytes are not this tag. Release the shortest
			// prefix after which the rest could still start the tag.
			k := shift(tag, s.matched)
			dst = s.emit(dst, kind, tag[:k])
			s.matched -= k
			continue
		}
		from := 0
		for {
			i := strings.IndexByte(chunk[from:], tag[0])
			if i < 0 {
				return s.emit(dst, kind, chunk)
			}
			i += from
			rest := chunk[i:]
			if len(rest) >= len(tag) {
				if rest[:len(tag)] == tag {
					dst = s.emit(dst, kind, chunk[:i])
					chunk = chunk[i+len(tag):]
					s.toggle()
					break
				}
				from = i + 1
				continue
			}
			if tag[:len(rest)] == rest {
				dst = s.emit(dst, kind, chunk[:i])
				s.matched = len(rest)
				return dst
			}
			from = i + 1
		}
	}
	return dst
}

func (s *Splitter) toggle() {
	s.inReasoning = !s.inReasoning
	if s.inReasoning {
		s.seen = true
	}
}

// shift returns the smallest k > 0 such that tag[k:m] is a prefix of tag, so
// that after giving up tag[:k] the remaining held bytes may still begin the
// tag. It returns m when no such k exists.
func shift(tag string, m int) int {
	for k := 1; k < m; k++ {
		if strings.HasPrefix(tag, tag[k:m]) {
			return k
		}
	}
	return m
}

// emit appends text of kind k, holding back an unfinished UTF-8 sequence at
// its end so that no piece ends inside a character.
func (s *Splitter) emit(dst []Piece, k Kind, t string) []Piece {
	if t == "" {
		return dst
	}
	if s.heldN > 0 {
		if s.heldKind != k {
			dst = s.releaseHeld(dst)
		} else {
			need := seqLen(s.held[0]) - s.heldN
			j := 0
			for j < need && j < len(t) && isCont(t[j]) {
				j++
			}
			switch {
			case j == need:
				var buf [utf8.UTFMax]byte
				copy(buf[:], s.held[:s.heldN])
				copy(buf[s.heldN:], t[:j])
				dst = append(dst, Piece{Kind: k, Text: string(buf[:s.heldN+j])})
				s.heldN = 0
				t = t[j:]
			case j == len(t):
				copy(s.held[s.heldN:], t)
				s.heldN += j
				return dst
			default:
				dst = s.releaseHeld(dst)
			}
		}
	}
	if n := unfinishedTail(t); n > 0 {
		copy(s.held[:], t[len(t)-n:])
		s.heldN = n
		s.heldKind = k
		t = t[:len(t)-n]
	}
	if t != "" {
		dst = append(dst, Piece{Kind: k, Text: t})
	}
	return dst
}

func (s *Splitter) releaseHeld(dst []Piece) []Piece {
	if s.heldN == 0 {
		return dst
	}
	dst = append(dst, Piece{Kind: s.heldKind, Text: string(s.held[:s.heldN])})
	s.heldN = 0
	return dst
}

func isCont(b byte) bool { return b&0xC0 == 0x80 }

// seqLen is the length of the UTF-8 sequence a lead byte starts (1 for bytes
// that cannot start a multi-byte sequence).
func seqLen(b byte) int {
	switch {
	case b >= 0xC2 && b <= 0xDF:
		return 2
	case b >= 0xE0 && b <= 0xEF:
		return 3
	case b >= 0xF0 && b <= 0xF4:
		return 4
	}
	return 1
}

// unfinishedTail returns how many bytes at the end of t start a multi-byte
// UTF-8 sequence that t does not finish.
func unfinishedTail(t string) int {
	if len(t) == 0 || t[len(t)-1] < 0x80 {
		return 0
	}
	for j := 1; j <= 3 && j <= len(t); j++ {
		b := t[len(t)-j]
		if isCont(b) {
			continue
		}
		if n := seqLen(b); n > j {
			return j
		}
		return 0
	}
	return 0
}
