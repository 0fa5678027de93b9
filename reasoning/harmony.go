package reasoning

import (
	"bytes"
	"strings"
)

// The harmony markers gpt-oss uses to frame messages. A message is
// <|start|>ROLE[ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>TYPE]<|message|>BODY
// ended by <|end|>, <|call|> (a tool call) or <|return|> (the final answer).
// The generation prompt ends with "<|start|>assistant", so generated text
// usually begins at <|channel|>.
const (
	HarmonyStart     = "<|start|>"
	HarmonyChannel   = "<|channel|>"
	HarmonyMessage   = "<|message|>"
	HarmonyEnd       = "<|end|>"
	HarmonyCall      = "<|call|>"
	HarmonyReturn    = "<|return|>"
	HarmonyConstrain = "<|constrain|>"
)

// maxHarmonyHeader bounds the bytes between the start of a message header
// and <|message|>; a longer run is not a header and is released as content.
const maxHarmonyHeader = 512

type harmonyPhase uint8

const (
	hBetween harmonyPhase = iota // outside any message
	hHeader                      // inside a header, before <|message|>
	hBody                        // inside a message body
)

type harmonyState struct {
	state harmonyPhase
	kind  Kind // of the body
	pass  bool // the message has a recipient: pass it through verbatim
	buf   []byte
}

// HarmonyHeader is a parsed harmony message header.
type HarmonyHeader struct {
	// Role is the author, e.g. "assistant" ("" when the header began at
	// <|channel|>, as generated text does).
	Role string
	// Channel is "analysis", "commentary" or "final" (or "" when absent).
	Channel string
	// Recipient is the addressee, e.g. "functions.get_weather" ("" for none).
	Recipient string
	// Constrain is the content type after <|constrain|>, e.g. "json".
	Constrain string
}

// ParseHarmonyHeader parses the text of a header, from <|start|> or
// <|channel|> up to but not including <|message|>.
func ParseHarmonyHeader(h string) HarmonyHeader {
	var out HarmonyHeader
	if rest, ok := strings.CutPrefix(h, HarmonyStart); ok {
		role, after := cutMarker(rest)
		h = after
		out.Role, out.Recipient = splitRecipient(role)
	}
	for h != "" {
		switch {
		case strings.HasPrefix(h, HarmonyChannel):
			h = h[len(HarmonyChannel):]
			word, rest := cutMarker(h)
			var recip string
			out.Channel, recip = splitRecipient(word)
			if recip != "" {
				out.Recipient = recip
			}
			h = rest
		case strings.HasPrefix(h, HarmonyConstrain):
			h = h[len(HarmonyConstrain):]
			word, rest := cutMarker(h)
			out.Constrain = strings.TrimSpace(word)
			h = rest
		default:
			_, rest := cutMarker(h[1:])
			h = rest
		}
	}
	return out
}

// cutMarker splits h at the next "<|".
func cutMarker(h string) (before, rest string) {
	if i := strings.Index(h, "<|"); i >= 0 {
		return h[:i], h[i:]
	}
	return h, ""
}

// splitRecipient splits "commentary to=functions.f json" into the first word
// and the recipient.
func splitRecipient(s string) (word, recipient string) {
	for _, f := range strings.Fields(s) {
		if r, ok := strings.CutPrefix(f, "to="); ok {
			recipient = r
		} else if word == "" {
			word = f
		}
	}
	return word, recipient
}

func (s *Splitter) feedHarmony(dst []Piece, chunk string) []Piece {
	h := &s.h
	if h.state != hHeader && len(h.buf) > 0 {
		// A possible marker was cut at the end of the previous chunk.
		chunk = string(h.buf) + chunk
		h.buf = h.buf[:0]
	}
	for len(chunk) > 0 {
		switch h.state {
		case hHeader:
			before := len(h.buf)
			h.buf = append(h.buf, chunk...)
			// <|message|> must begin within maxHarmonyHeader bytes; the
			// search is bounded the same way however the text was cut.
			limit := maxHarmonyHeader + len(HarmonyMessage)
			if i := bytes.Index(h.buf[:min(len(h.buf), limit)], []byte(HarmonyMessage)); i >= 0 {
				end := i + len(HarmonyMessage)
				consumed := end - before
				dst = s.startBody(dst, string(h.buf[:i]), string(h.buf[:end]))
				h.buf = h.buf[:0]
				chunk = chunk[consumed:]
				continue
			}
			if len(h.buf) >= limit {
				// Not a header: its first bytes are content and the
				// rest is read again.
				cut := maxHarmonyHeader + 1
				text, rest := string(h.buf[:cut]), string(h.buf[cut:])
				h.buf = h.buf[:0]
				h.state = hBetween
				dst = s.emit(dst, Content, text)
				chunk = rest
				continue
			}
			return dst
		case hBetween, hBody:
			kind := Content
			if h.state == hBody {
				kind = h.kind
			}
			from := 0
			for {
				i := strings.Index(chunk[from:], "<|")
				if i < 0 {
					if strings.HasSuffix(chunk, "<") {
						dst = s.emit(dst, kind, chunk[:len(chunk)-1])
						h.buf = append(h.buf[:0], '<')
						return dst
					}
					return s.emit(dst, kind, chunk)
				}
				i += from
				rest := chunk[i:]
				m, partial := harmonyMarkerAt(rest, h.state == hBody)
				if partial {
					dst = s.emit(dst, kind, chunk[:i])
					h.buf = append(h.buf[:0], rest...)
					return dst
				}
				if m == "" {
					from = i + 2
					continue
				}
				switch m {
				case HarmonyStart, HarmonyChannel:
					if h.state == hBody && h.pass {
						dst = s.emit(dst, Content, chunk[:i])
					} else {
						dst = s.emit(dst, kind, chunk[:i])
					}
					h.state = hHeader
					h.buf = h.buf[:0]
					chunk = rest
				default: // a body terminator
					if h.pass {
						dst = s.emit(dst, Content, chunk[:i+len(m)])
					} else {
						dst = s.emit(dst, kind, chunk[:i])
					}
					h.state = hBetween
					h.pass = false
					chunk = chunk[i+len(m):]
				}
				break
			}
		}
	}
	return dst
}

// harmonyMarkerAt reports which marker rest (starting with "<|") begins with.
// partial is true when rest is a proper prefix of a marker that could matter.
func harmonyMarkerAt(rest string, inBody bool) (marker string, partial bool) {
	markers := [...]string{HarmonyStart, HarmonyChannel, HarmonyEnd, HarmonyCall, HarmonyReturn}
	n := len(markers)
	if !inBody {
		n = 2 // between messages only a header can start
	}
	for _, m := range markers[:n] {
		if strings.HasPrefix(rest, m) {
			return m, false
		}
		if len(rest) < len(m) && strings.HasPrefix(m, rest) {
			partial = true
		}
	}
	return "", partial
}

// startBody decides what the body after header h is. raw is the header
// with its <|message|> marker.
func (s *Splitter) startBody(dst []Piece, h, raw string) []Piece {
	hdr := ParseHarmonyHeader(h)
	st := &s.h
	st.state = hBody
	st.pass = false
	switch {
	case hdr.Recipient != "":
		st.kind = Content
		st.pass = true
		dst = s.emit(dst, Content, raw)
	case hdr.Channel == "analysis":
		st.kind = Reasoning
		s.seen = true
	default:
		st.kind = Content
	}
	return dst
}

func (s *Splitter) flushHarmony(dst []Piece) []Piece {
	h := &s.h
	switch h.state {
	case hHeader:
		// A header cut off by the end of generation: framing, not text.
		if ParseHarmonyHeader(string(h.buf)).Channel == "analysis" {
			s.seen = true
		}
	default:
		kind := Content
		if h.state == hBody {
			kind = h.kind
		}
		dst = s.emit(dst, kind, string(h.buf))
	}
	h.buf = h.buf[:0]
	return dst
}
