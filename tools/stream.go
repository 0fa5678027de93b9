package tools

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/prism-local/prism/reasoning"
)

// EventKind says what an [Event] carries.
type EventKind uint8

const (
	// EventContent is answer text (delta.content).
	EventContent EventKind = iota + 1
	// EventReasoning is thinking text (delta.reasoning_content).
	EventReasoning
	// EventToolCall is a tool-call delta (delta.tool_calls[0]).
	EventToolCall
	// EventWarning reports text that looked like a tool call but was not
	// one; the text itself has been (or is being) returned as content.
	EventWarning
)

// String returns "content", "reasoning", "tool_call" or "warning".
func (k EventKind) String() string {
	switch k {
	case EventContent:
		return "content"
	case EventReasoning:
		return "reasoning"
	case EventToolCall:
		return "tool_call"
	case EventWarning:
		return "warning"
	}
	return "unknown"
}

// Event is one output of a [StreamParser].
type Event struct {
	Kind EventKind
	// Text is the content or reasoning text.
	Text string
	// Call is the tool-call delta of an EventToolCall.
	Call CallDelta
	// Warning is set for an EventWarning.
	Warning Warning
}

// CallDelta is an OpenAI-style streamed tool-call delta. The first delta of a
// call carries Index, ID, Type ("function") and Name; later deltas carry
// Index and a fragment of Arguments. The fragments of a call joined are its
// arguments as JSON text.
type CallDelta struct {
	Index     int
	ID        string
	Type      string
	Name      string
	Arguments string
}

// Warning describes tool-call text that was handed back as content.
type Warning struct {
	// Index is the index of a call already announced by a first delta
	// that is now abandoned, or -1 when no delta was sent for it.
	Index int
	// Format is the tool-call format being parsed.
	Format Format
	// Message says what was wrong.
	Message string
}

// String formats the warning for logs.
func (w Warning) String() string {
	if w.Index >= 0 {
		return fmt.Sprintf("tools: %s tool call %d abandoned, returned as content: %s", w.Format, w.Index, w.Message)
	}
	return fmt.Sprintf("tools: %s tool-call text returned as content: %s", w.Format, w.Message)
}

// StreamOption configures a [StreamParser] and [Parse].
type StreamOption func(*streamConfig)

type streamConfig struct {
	ids    func(index int) string
	split  []reasoning.Option
	logger *slog.Logger
}

// WithLogger also logs every warning at level Warn on logger.
func WithLogger(logger *slog.Logger) StreamOption {
	return func(c *streamConfig) { c.logger = logger }
}

// WithIDs sets the function that makes call ids (default: "call_" and 24
// random letters and digits). index is the call's index in the answer.
func WithIDs(f func(index int) string) StreamOption {
	return func(c *streamConfig) {
		if f != nil {
			c.ids = f
		}
	}
}

// WithReasoning passes options to the reasoning splitter that runs in front
// of the tool-call parser, e.g. reasoning.WithPrompt(prompt) so that a prompt
// which leaves a think block open starts in reasoning.
func WithReasoning(opts ...reasoning.Option) StreamOption {
	return func(c *streamConfig) { c.split = append(c.split, opts...) }
}

// RandomID returns "call_" followed by 24 random letters and digits.
func RandomID(int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b [5 + 24]byte
	copy(b[:], "call_")
	for i := 5; i < len(b); i++ {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b[:])
}

// StreamParser turns the text pieces of one generated answer into content,
// reasoning and tool-call events. It runs a reasoning splitter first (think
// tags, or harmony channels for FormatHarmony) and parses tool calls in the
// content. Create one per answer; it is not safe for concurrent use.
type StreamParser struct {
	format  Format
	logger  *slog.Logger
	split   *reasoning.Splitter
	pieces  []reasoning.Piece
	ids     func(int) string
	openers []string
	first   byte // the first byte of every opener

	// content state
	pend      string // a held opener prefix (a prefix of an opener constant)
	pendWS    string // held trailing whitespace
	afterCall bool   // drop whitespace right after a call
	atStart   bool   // only whitespace seen so far (Llama bare JSON calls)

	// region state: text from an opener to the end of its calls
	inRegion bool
	buf      []byte
	pos      int
	src      string
	srcOff   int
	phase    phase
	sc       jsonScan
	bare     bool // Llama JSON without <|python_tag|>
	call     callState
	next     int // index of the next announced call
	failed   []int
	partial  int // the call Cut left open, -1 for none
	done     int // calls completed and valid

	headStart   int    // DeepSeek: where the type/name text starts
	regionCalls int    // calls begun in the current region
	lastEnd     int    // where the region's last finished call ended
	regionWS    string // whitespace dropped before the region's opener
}

type callState struct {
	active    bool
	start     int
	announced bool
	index     int
	name      string
	argsStart int
	argsEnd   int
	emitted   int
	argsStr   bool
}

type phase uint8

const (
	phStart         phase = iota // after an opener, before the first value
	phJSON                       // the JSON scanner runs
	phAfterJSON                  // after a JSON value
	phLlamaBetween               // after a Llama call: ";" or another call
	phMistralName                // [TOOL_CALLS]NAME
	phMistralArgs                // expecting [ARGS] (or [CALL_ID]…[ARGS])
	phDSBetween                  // DeepSeek: a call begins or the calls end
	phDSHead                     // DeepSeek: type or name up to the separator
	phDSName                     // DeepSeek V3: the name line
	phDSFence                    // DeepSeek V3: ```json line
	phDSAfter                    // DeepSeek: closing fence and call end
	phHarmonyHeader              // harmony: header up to <|message|>
)

// NewStreamParser returns a parser for one answer in format f.
func NewStreamParser(f Format, opts ...StreamOption) *StreamParser {
	c := streamConfig{ids: RandomID}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	split := c.split
	if f == FormatHarmony {
		split = append([]reasoning.Option{reasoning.WithHarmony()}, split...)
	}
	p := &StreamParser{
		format:  f,
		split:   reasoning.NewSplitter(split...),
		ids:     c.ids,
		logger:  c.logger,
		atStart: true,
		partial: -1,
	}
	switch f {
	case FormatHermes:
		p.openers = []string{hermesOpen}
	case FormatLlama3:
		p.openers = []string{llamaPythonTag}
	case FormatMistral:
		p.openers = []string{mistralCalls}
	case FormatDeepSeekV3:
		p.openers = []string{dsCallsBegin}
	case FormatHarmony:
		p.openers = []string{reasoning.HarmonyStart, reasoning.HarmonyChannel}
	}
	if len(p.openers) > 0 {
		p.first = p.openers[0][0]
	}
	return p
}

// Format returns the parser's tool-call format.
func (p *StreamParser) Format() Format { return p.format }

// ReasoningSeen reports whether the answer had any reasoning so far (see
// reasoning.Splitter.Seen).
func (p *StreamParser) ReasoningSeen() bool { return p.split.Seen() }

// InReasoning reports whether the answer is inside reasoning now (see
// reasoning.Splitter.InReasoning), so a caller can count the tokens that
// were thinking.
func (p *StreamParser) InReasoning() bool { return p.split.InReasoning() }

// Held returns how many bytes at the end of the text fed so far the parser
// holds back undecided: what the reasoning splitter holds, a possible
// opener, trailing whitespace, and a tool-call region not yet closed (a
// call abandoned there is returned as content). The content and reasoning
// handed out so far were read from the text before them; a call's events
// are read from its region as it grows.
func (p *StreamParser) Held() int {
	n := p.split.Held() + len(p.pend) + len(p.pendWS)
	if p.inRegion {
		n += len(p.regionWS) + len(p.buf)
	}
	return n
}

// Feed parses the next piece of generated text and appends the resulting
// events to dst. Reuse dst between calls to avoid allocation.
func (p *StreamParser) Feed(dst []Event, piece string) []Event {
	p.pieces = p.split.Feed(p.pieces[:0], piece)
	return p.route(dst)
}

// FeedThinking feeds thinking text that arrived already separated (Ollama's
// message.thinking) as reasoning.
func (p *StreamParser) FeedThinking(dst []Event, thinking string) []Event {
	p.pieces = p.split.FeedThinking(p.pieces[:0], thinking)
	return p.route(dst)
}

// Flush ends the answer: held-back text is released, a call cut off by the
// end of generation is completed if it is whole and otherwise handed back
// as content with a warning.
func (p *StreamParser) Flush(dst []Event) []Event {
	p.pieces = p.split.Flush(p.pieces[:0])
	dst = p.route(dst)
	// At the end advance always closes the region; text after it may open
	// another one, which is then closed the same way.
	for p.inRegion {
		var rest string
		dst, rest = p.advance(dst, true)
		if rest != "" {
			dst = p.content(dst, rest)
		}
	}
	if p.pend != "" {
		dst = p.emitContent(dst, p.pend)
		p.pend = ""
	}
	if p.pendWS != "" {
		dst = append(dst, Event{Kind: EventContent, Text: p.pendWS})
		p.pendWS = ""
	}
	return dst
}

// Cut ends an answer the token limit cut off (finish reason length). A
// call already announced and still open stays in the answer as OpenAI
// leaves one: its arguments as far as they came (not valid JSON), none of
// its text handed back as content, and Partial names it. Everything else
// ends as Flush ends it.
func (p *StreamParser) Cut(dst []Event) []Event {
	p.pieces = p.split.Flush(p.pieces[:0])
	dst = p.route(dst)
	p.pieces = p.pieces[:0]
	if p.inRegion && p.call.active && p.call.announced {
		dst = p.streamArgs(dst)
		p.partial = p.call.index
		p.inRegion, p.bare, p.afterCall = false, false, false
		p.call = callState{}
	}
	return p.Flush(dst)
}

// Partial returns the index of the call Cut left open, or -1.
func (p *StreamParser) Partial() int { return p.partial }

// Completed returns how many valid calls the answer has made so far; when
// it is above zero at the end, the answer's finish_reason is "tool_calls".
func (p *StreamParser) Completed() int { return p.done }

// Abandoned returns the indexes of calls that were announced and then
// abandoned because their text was not a valid call.
func (p *StreamParser) Abandoned() []int { return slices.Clone(p.failed) }

func (p *StreamParser) route(dst []Event) []Event {
	for _, pc := range p.pieces {
		if pc.Kind == reasoning.Reasoning {
			dst = p.releasePending(dst)
			dst = append(dst, Event{Kind: EventReasoning, Text: pc.Text})
			continue
		}
		dst = p.content(dst, pc.Text)
	}
	return dst
}

// releasePending emits the start of an opener held back before reasoning
// began: the text after it went to the think block, so it opens nothing.
// Emitting it now keeps the events in the order of the text they came from
// (Held counts only text at the end), which the logprobs trail relies on.
// Whitespace stays held: it is dropped if a call follows the reasoning.
func (p *StreamParser) releasePending(dst []Event) []Event {
	if p.inRegion || p.pend == "" {
		return dst
	}
	held := p.pend
	p.pend = ""
	return p.emitContent(dst, held)
}

// content parses content text s for tool calls.
func (p *StreamParser) content(dst []Event, s string) []Event {
	for len(s) > 0 {
		if p.inRegion {
			base := len(p.buf)
			p.buf = append(p.buf, s...)
			p.src, p.srcOff = s, base
			dst, s = p.advance(dst, false)
			continue
		}
		dst, s = p.scanContent(dst, s)
	}
	return dst
}

// scanContent emits content from s up to the next opener and returns what
// follows the opener (the region is then open), or "" when s is used up.
func (p *StreamParser) scanContent(dst []Event, s string) ([]Event, string) {
	if p.pend != "" {
		for _, m := range p.openers {
			if !strings.HasPrefix(m, p.pend) {
				continue
			}
			rest := m[len(p.pend):]
			n := min(len(rest), len(s))
			if s[:n] != rest[:n] {
				continue
			}
			if n < len(rest) {
				p.pend = m[:len(p.pend)+n]
				return dst, ""
			}
			p.pend = ""
			return p.openRegion(dst, m), s[n:]
		}
		// Not an opener after all: the held bytes are content.
		held := p.pend
		p.pend = ""
		dst = p.emitContent(dst, held)
	}
	if p.format == FormatLlama3 && p.atStart {
		i := 0
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return p.emitContent(dst, s), ""
		}
		if s[i] == '{' {
			dst = p.emitContent(dst, s[:i])
			p.bare = true
			dst = p.openRegion(dst, "")
			return dst, s[i:]
		}
	}
	if p.first == 0 {
		return p.emitContent(dst, s), ""
	}
	from := 0
	for {
		i := strings.IndexByte(s[from:], p.first)
		if i < 0 {
			return p.emitContent(dst, s), ""
		}
		i += from
		rest := s[i:]
		for _, m := range p.openers {
			if strings.HasPrefix(rest, m) {
				dst = p.emitContent(dst, s[:i])
				return p.openRegion(dst, m), rest[len(m):]
			}
		}
		for _, m := range p.openers {
			if len(rest) < len(m) && strings.HasPrefix(m, rest) {
				dst = p.emitContent(dst, s[:i])
				p.pend = m[:len(rest)]
				return dst, ""
			}
		}
		from = i + 1
	}
}

// emitContent emits content, holding back trailing whitespace (dropped if a
// call follows) and dropping whitespace right after a call.
func (p *StreamParser) emitContent(dst []Event, s string) []Event {
	if p.afterCall {
		i := 0
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		s = s[i:]
		if s == "" {
			return dst
		}
		p.afterCall = false
	}
	j := len(s)
	for j > 0 && isSpace(s[j-1]) {
		j--
	}
	if j == 0 {
		if p.pendWS == "" {
			p.pendWS = s
		} else {
			p.pendWS += s
		}
		return dst
	}
	if p.pendWS != "" {
		dst = append(dst, Event{Kind: EventContent, Text: p.pendWS})
	}
	dst = append(dst, Event{Kind: EventContent, Text: s[:j]})
	p.pendWS = s[j:]
	p.atStart = false
	return dst
}

func (p *StreamParser) openRegion(dst []Event, opener string) []Event {
	// Whitespace right before a call is dropped, unless the call turns
	// out not to be one.
	p.regionWS = p.pendWS
	p.pendWS = ""
	p.atStart = false
	p.inRegion = true
	p.buf = append(p.buf[:0], opener...)
	p.pos = len(opener)
	p.src, p.srcOff = "", len(p.buf)
	p.phase = phStart
	p.regionCalls = 0
	p.lastEnd = 0
	if p.format == FormatHarmony {
		p.phase = phHarmonyHeader
	}
	p.call = callState{}
	return dst
}

// text returns buf[a:b] as a string, without copying when the bytes come
// from the current piece.
func (p *StreamParser) text(a, b int) string {
	if a >= p.srcOff && b <= p.srcOff+len(p.src) {
		return p.src[a-p.srcOff : b-p.srcOff]
	}
	return string(p.buf[a:b])
}

// closeRegion ends the region at buf offset end and returns the text after
// it, which is content again. afterCall drops whitespace that follows.
func (p *StreamParser) closeRegion(end int, afterCall bool) string {
	rest := ""
	if end < len(p.buf) {
		rest = p.text(end, len(p.buf))
	}
	p.inRegion = false
	p.bare = false
	p.afterCall = afterCall
	return rest
}

// fail abandons the current call at buf offset at: its text up to at goes
// back as content with a warning, and the text from at on is read again as
// content.
func (p *StreamParser) fail(dst []Event, at int, msg string) ([]Event, string) {
	start := p.call.start
	if !p.call.active {
		start = p.lastEnd
	}
	if p.bare && !p.call.announced {
		// Llama JSON at the start of an answer that never named a
		// tool is ordinary content.
		return p.handBack(dst, at)
	}
	w := Warning{Index: -1, Format: p.format, Message: msg}
	if p.call.active && p.call.announced {
		w.Index = p.call.index
		p.failed = append(p.failed, p.call.index)
	}
	dst = append(dst, Event{Kind: EventWarning, Warning: w})
	if p.logger != nil {
		p.logger.Warn("tool-call text returned as content", "format", p.format.String(), "index", w.Index, "cause", w.Message)
	}
	raw := ""
	if at > start {
		raw = p.text(start, at)
	}
	rest := ""
	if at < len(p.buf) {
		rest = p.text(at, len(p.buf))
	}
	p.inRegion = false
	p.bare = false
	p.call = callState{}
	p.afterCall = false
	if start == 0 && p.regionWS != "" {
		dst = p.emitContent(dst, p.regionWS)
	}
	if raw != "" {
		dst = p.emitContent(dst, raw)
	}
	return dst, rest
}

// beginCall starts a call whose raw text begins at buf offset start.
// The first call of a region starts at the region's opener.
func (p *StreamParser) beginCall(start int) {
	if p.regionCalls == 0 {
		start = 0
	}
	p.regionCalls++
	p.call = callState{active: true, start: start, argsStart: -1, argsEnd: -1}
}

// announce sends the first delta of the current call.
func (p *StreamParser) announce(dst []Event, name string) []Event {
	c := &p.call
	c.name = name
	c.announced = true
	c.index = p.next
	p.next++
	dst = append(dst, Event{Kind: EventToolCall, Call: CallDelta{
		Index: c.index, ID: p.ids(c.index), Type: "function", Name: name,
	}})
	return p.streamArgs(dst)
}

// streamArgs sends the argument bytes scanned since the last delta.
func (p *StreamParser) streamArgs(dst []Event) []Event {
	c := &p.call
	if !c.announced || c.argsStart < 0 || c.argsStr {
		return dst
	}
	upto := p.pos
	if c.argsEnd >= 0 {
		upto = c.argsEnd
	}
	if upto > c.emitted {
		dst = append(dst, Event{Kind: EventToolCall, Call: CallDelta{Index: c.index, Arguments: p.text(c.emitted, upto)}})
		c.emitted = upto
	}
	return dst
}

// endCall checks the finished call; ok is false when it is not a valid call
// (the caller then fails at end).
func (p *StreamParser) endCall(dst []Event) ([]Event, string, bool) {
	c := &p.call
	if c.name == "" {
		return dst, "the call has no name", false
	}
	if c.argsStart < 0 {
		if !c.announced {
			dst = p.announce(dst, c.name)
		}
		dst = append(dst, Event{Kind: EventToolCall, Call: CallDelta{Index: c.index, Arguments: "{}"}})
		c.active = false
		p.done++
		return dst, "", true
	}
	args := p.buf[c.argsStart:c.argsEnd]
	if c.argsStr {
		var decoded string
		if err := json.Unmarshal(args, &decoded); err != nil || !isObject(decoded) {
			return dst, "the arguments string is not a JSON object", false
		}
		if !c.announced {
			dst = p.announce(dst, c.name)
		}
		dst = append(dst, Event{Kind: EventToolCall, Call: CallDelta{Index: c.index, Arguments: decoded}})
		c.active = false
		p.done++
		return dst, "", true
	}
	if args[0] != '{' || !json.Valid(args) {
		return dst, "the arguments are not a JSON object", false
	}
	if !c.announced {
		dst = p.announce(dst, c.name)
	}
	dst = p.streamArgs(dst)
	c.active = false
	p.done++
	return dst, "", true
}

// unquote decodes the JSON string buf[a:b] (quotes included).
func (p *StreamParser) unquote(a, b int) (string, bool) {
	raw := p.buf[a:b]
	if len(raw) < 2 {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return p.text(a+1, b-1), true
}

// isObject reports whether s is one JSON object (surrounding space allowed).
func isObject(s string) bool {
	t := strings.TrimSpace(s)
	return len(t) > 0 && t[0] == '{' && json.Valid([]byte(t))
}
