package tools

import (
	"bytes"
	"strings"

	"github.com/prism-local/prism/reasoning"
)

// Bounds on framing text inside a call region.
const (
	maxHeader = 512 // harmony header, DeepSeek type/name line, Mistral name
)

// advance parses the region buffer from p.pos as far as it can. It returns
// the text after the region once the region has ended (the region is then
// closed), or "" while the region needs more input. With eof it always
// closes the region.
func (p *StreamParser) advance(dst []Event, eof bool) ([]Event, string) {
	for {
		switch p.phase {
		case phStart:
			p.skipSpace()
			if p.pos == len(p.buf) {
				if eof {
					return p.fail(dst, len(p.buf), "nothing follows the tool-call marker")
				}
				return dst, ""
			}
			c := p.buf[p.pos]
			switch p.format {
			case FormatHermes, FormatLlama3:
				if c != '{' {
					return p.fail(dst, p.pos, "the tool-call marker is not followed by a JSON object")
				}
				p.sc.reset(1)
				p.phase = phJSON
			case FormatMistral:
				switch {
				case c == '[':
					p.sc.reset(2)
					p.phase = phJSON
				case c == '{':
					p.sc.reset(1)
					p.phase = phJSON
				case isNameByte(c):
					p.call.start = p.pos // the name's start, kept until the call begins
					p.phase = phMistralName
				default:
					return p.fail(dst, p.pos, "[TOOL_CALLS] is not followed by calls")
				}
			case FormatDeepSeekV3:
				p.phase = phDSBetween
			default:
				return p.fail(dst, p.pos, "unexpected text")
			}
		case phJSON:
			var done, closed bool
			var rest string
			dst, rest, done, closed = p.runJSON(dst)
			if closed {
				return dst, rest
			}
			if !done {
				dst = p.streamArgs(dst)
				if eof {
					return p.fail(dst, len(p.buf), "the tool call was cut off")
				}
				return dst, ""
			}
			p.phase = phAfterJSON
		case phAfterJSON:
			switch p.format {
			case FormatLlama3:
				p.phase = phLlamaBetween
				continue
			case FormatMistral:
				return dst, p.closeRegion(p.pos, true)
			case FormatDeepSeekV3:
				p.phase = phDSAfter
				continue
			}
			p.skipSpace()
			if p.pos == len(p.buf) {
				if eof {
					return dst, p.closeRegion(p.pos, true)
				}
				return dst, ""
			}
			closers := []string{hermesClose}
			if p.format == FormatHarmony {
				closers = []string{reasoning.HarmonyCall, reasoning.HarmonyEnd, reasoning.HarmonyReturn}
			}
			m, partial := p.matchAny(closers)
			switch {
			case m != "":
				return dst, p.closeRegion(p.pos+len(m), true)
			case partial && !eof:
				return dst, ""
			default:
				return dst, p.closeRegion(p.pos, true)
			}
		case phLlamaBetween:
			for p.pos < len(p.buf) && (isSpace(p.buf[p.pos]) || p.buf[p.pos] == ';') {
				p.pos++
			}
			if p.pos == len(p.buf) {
				if eof {
					return dst, p.closeRegion(p.pos, true)
				}
				return dst, ""
			}
			if p.buf[p.pos] == '{' {
				p.sc.reset(1)
				p.phase = phJSON
				continue
			}
			m, partial := p.matchAny([]string{llamaPythonTag, llamaEOM, llamaEOT})
			switch {
			case m == llamaEOM || m == llamaEOT:
				// An end-of-message token after the calls is framing.
				return dst, p.closeRegion(p.pos+len(m), true)
			case m != "":
				p.pos += len(m)
			case partial && !eof:
				return dst, ""
			default:
				return dst, p.closeRegion(p.pos, true)
			}
		case phMistralName:
			for p.pos < len(p.buf) && isNameByte(p.buf[p.pos]) && p.pos-p.call.start < maxHeader {
				p.pos++
			}
			if p.pos-p.call.start >= maxHeader {
				return p.fail(dst, p.pos, "the tool name is too long")
			}
			if p.pos == len(p.buf) {
				if eof {
					return p.fail(dst, len(p.buf), "the tool call was cut off")
				}
				return dst, ""
			}
			nameStart := p.call.start
			name := p.text(nameStart, p.pos)
			p.beginCall(nameStart)
			dst = p.announce(dst, name)
			p.phase = phMistralArgs
		case phMistralArgs:
			if m, partial := p.matchAny([]string{mistralArgs, mistralCallID}); m == mistralArgs {
				p.pos += len(m)
				p.sc.reset(0)
				p.phase = phJSON
			} else if m == mistralCallID {
				j, ok := p.find(p.pos, mistralArgs, maxHeader)
				if !ok {
					if j >= 0 || eof {
						return p.fail(dst, p.bounded(p.pos, maxHeader), "[CALL_ID] without [ARGS]")
					}
					return dst, ""
				}
				j -= p.pos
				p.pos += j + len(mistralArgs)
				p.sc.reset(0)
				p.phase = phJSON
			} else if partial && !eof {
				return dst, ""
			} else {
				return p.fail(dst, p.pos, "the tool name is not followed by [ARGS]")
			}
		case phDSBetween:
			p.skipSpace()
			if p.pos == len(p.buf) {
				if !eof {
					return dst, ""
				}
				if p.next > 0 || len(p.failed) > 0 {
					return dst, p.closeRegion(p.pos, true)
				}
				return p.fail(dst, len(p.buf), "no tool call follows the marker")
			}
			m, partial := p.matchAny([]string{dsCallBegin, dsCallsEnd})
			switch {
			case m == dsCallBegin:
				p.beginCall(p.pos)
				p.pos += len(m)
				p.phase = phDSHead
				p.headStart = p.pos
			case m == dsCallsEnd:
				if p.regionCalls == 0 {
					return p.fail(dst, p.pos+len(m), "no tool call between the markers")
				}
				return dst, p.closeRegion(p.pos+len(m), true)
			case partial && !eof:
				return dst, ""
			case p.regionCalls > 0:
				return dst, p.closeRegion(p.pos, true)
			default:
				return p.fail(dst, p.pos, "no tool call follows the marker")
			}
		case phDSHead:
			j, ok := p.find(p.headStart, dsSep, maxHeader)
			if !ok {
				if j >= 0 || eof {
					return p.fail(dst, p.bounded(p.headStart, maxHeader), "the tool call has no separator")
				}
				return dst, ""
			}
			j -= p.headStart
			head := strings.TrimSpace(p.text(p.headStart, p.headStart+j))
			p.pos = p.headStart + j + len(dsSep)
			if head == "function" {
				p.headStart = p.pos
				p.phase = phDSName
				continue
			}
			if head == "" {
				return p.fail(dst, p.pos, "the tool call has no name")
			}
			dst = p.announce(dst, head)
			p.sc.reset(0)
			p.phase = phJSON
		case phDSName:
			j, ok := p.find(p.headStart, "\n", maxHeader)
			if !ok {
				if j >= 0 || eof {
					return p.fail(dst, p.bounded(p.headStart, maxHeader), "the tool call's name line is cut off")
				}
				return dst, ""
			}
			j -= p.headStart
			name := strings.TrimSpace(p.text(p.headStart, p.headStart+j))
			p.pos = p.headStart + j + 1
			if name == "" {
				return p.fail(dst, p.pos, "the tool call has no name")
			}
			dst = p.announce(dst, name)
			p.phase = phDSFence
		case phDSFence:
			p.skipSpace()
			if p.pos == len(p.buf) {
				if eof {
					return p.fail(dst, len(p.buf), "the tool call was cut off")
				}
				return dst, ""
			}
			if p.buf[p.pos] == '{' {
				p.sc.reset(0)
				p.phase = phJSON
				continue
			}
			m, partial := p.matchAny([]string{"```"})
			if m == "" {
				if partial && !eof {
					return dst, ""
				}
				return p.fail(dst, p.pos, "the arguments are not in a ```json block")
			}
			j, ok := p.find(p.pos, "\n", 32)
			if !ok {
				if j >= 0 || eof {
					return p.fail(dst, p.bounded(p.pos, 32), "the ```json line is cut off")
				}
				return dst, ""
			}
			p.pos = j + 1
			p.sc.reset(0)
			p.phase = phJSON
		case phDSAfter:
			p.skipSpace()
			if p.pos == len(p.buf) {
				if eof {
					return dst, p.closeRegion(p.pos, true)
				}
				return dst, ""
			}
			m, partial := p.matchAny([]string{"```", dsCallEnd})
			switch {
			case m == "```":
				p.pos += len(m)
			case m == dsCallEnd:
				p.pos += len(m)
				p.phase = phDSBetween
			case partial && !eof:
				return dst, ""
			default:
				p.phase = phDSBetween
			}
		case phHarmonyHeader:
			j, ok := p.find(0, reasoning.HarmonyMessage, maxHeader)
			if !ok {
				if j >= 0 || eof {
					return p.fail(dst, p.bounded(0, maxHeader), "the message header is cut off")
				}
				return dst, ""
			}
			hdr := reasoning.ParseHarmonyHeader(string(p.buf[:j]))
			p.pos = j + len(reasoning.HarmonyMessage)
			if hdr.Recipient == "" {
				// Not a call: the framing goes, the body is content.
				return dst, p.closeRegion(p.pos, false)
			}
			p.beginCall(0)
			dst = p.announce(dst, strings.TrimPrefix(hdr.Recipient, "functions."))
			p.sc.reset(0)
			p.phase = phJSON
		}
	}
}

// runJSON steps the scanner over the buffered bytes. done reports that the
// JSON value is complete (p.pos is just after it); closed that the region
// was closed (failed or handed back), with rest the text after it.
func (p *StreamParser) runJSON(dst []Event) (out []Event, rest string, done, closed bool) {
	for p.pos < len(p.buf) {
		if p.sc.state == sString {
			// Fast path: the inside of a string has no events.
			i := p.pos
			for i < len(p.buf) {
				if c := p.buf[i]; c == '"' || c == '\\' || c < 0x20 {
					break
				}
				i++
			}
			p.pos = i
			if i == len(p.buf) {
				break
			}
		}
		ev := p.sc.step(p.buf, p.pos)
		if ev == 0 {
			p.pos++
			continue
		}
		if ev&evError != 0 {
			dst, rest = p.fail(dst, p.pos, "invalid JSON")
			return dst, rest, false, true
		}
		if ev&evCallStart != 0 {
			p.beginCall(p.pos)
		}
		if ev&evFirstKey != 0 && p.bare {
			switch string(p.buf[p.sc.keyStart+1 : p.pos]) {
			case "name", "type", "function":
			default:
				// Plain JSON content, not a call.
				dst, rest = p.handBack(dst, p.pos+1)
				return dst, rest, false, true
			}
		}
		if ev&evArgsStart != 0 {
			if !p.call.active {
				p.beginCall(0)
			}
			c := &p.call
			c.argsStart = p.sc.valStart
			c.emitted = c.argsStart
			c.argsStr = p.buf[c.argsStart] == '"'
		}
		if ev&evNameEnd != 0 {
			name, ok := p.unquote(p.sc.valStart, p.sc.nameEndAt)
			if !ok || name == "" {
				dst, rest = p.fail(dst, p.pos+1, "the tool name is not a non-empty string")
				return dst, rest, false, true
			}
			if !p.call.announced {
				p.call.name = name
				dst = p.announce(dst, name)
			}
		}
		if ev&evArgsEnd != 0 {
			p.call.argsEnd = p.sc.argsEndAt
		}
		if ev&evCallEnd != 0 || (ev&evDone != 0 && p.sc.callDepth == 0) {
			endAt := p.pos + 1
			if ev&evCallEnd == 0 {
				endAt = p.sc.doneAt
			}
			var msg string
			var ok bool
			dst, msg, ok = p.endCall(dst)
			if !ok {
				dst, rest = p.fail(dst, endAt, msg)
				return dst, rest, false, true
			}
			p.lastEnd = endAt
		}
		if ev&evDone != 0 && p.regionCalls == 0 {
			dst, rest = p.fail(dst, p.sc.doneAt, "no tool call in the list")
			return dst, rest, false, true
		}
		if ev&evDone != 0 {
			p.pos = p.sc.doneAt
			return dst, "", true, false
		}
		p.pos++
	}
	return dst, "", false, false
}

// handBack returns the region's text up to at as content without a warning
// (it was never a call) and the rest to be read again as content.
func (p *StreamParser) handBack(dst []Event, at int) ([]Event, string) {
	start := p.lastEnd
	if p.call.active {
		start = p.call.start
	}
	raw := p.text(start, at)
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
	return p.emitContent(dst, raw), rest
}

// find looks for m in the buffer from offset from, where it must begin within
// limit bytes. It returns the offset and true when found; -1 and false when
// it may still come; 0 and false when it cannot come within the limit.
func (p *StreamParser) find(from int, m string, limit int) (int, bool) {
	end := min(len(p.buf), from+limit+len(m))
	if j := bytes.Index(p.buf[from:end], []byte(m)); j >= 0 {
		return from + j, true
	}
	if end == from+limit+len(m) {
		return 0, false
	}
	return -1, false
}

// bounded is the offset where a search from from with limit gives up.
func (p *StreamParser) bounded(from, limit int) int { return min(len(p.buf), from+limit) }

func (p *StreamParser) skipSpace() {
	for p.pos < len(p.buf) && isSpace(p.buf[p.pos]) {
		p.pos++
	}
}

// matchAny reports which of ms the buffer has at p.pos, or whether the
// buffer ends in a proper prefix of one of them.
func (p *StreamParser) matchAny(ms []string) (m string, partial bool) {
	rest := p.buf[p.pos:]
	for _, m := range ms {
		if len(rest) >= len(m) {
			if string(rest[:len(m)]) == m {
				return m, false
			}
		} else if m[:len(rest)] == string(rest) {
			partial = true
		}
	}
	return "", partial
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
