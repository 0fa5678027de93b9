package tools

// jsonScan is an incremental JSON syntax scanner over a growing byte buffer.
// It is fed one byte at a time with the byte's offset and reports, through a
// bit set of events, where the parts a tool call needs begin and end: the
// "name" string and the "arguments" (or "parameters") value of a call object
// at a chosen depth, or the whole top-level value as the arguments.
//
// It checks structure (nesting, strings, escapes, literals) as bytes arrive so
// garbage is noticed at once; numbers are checked loosely here and strictly
// by json.Valid when the call ends.
type jsonScan struct {
	stack []byte // open containers: '{' or '['
	state scanState
	isKey bool
	lit   string // the rest of a literal being matched
	hex   int    // hex digits still expected in a \u escape

	// callDepth is the depth inside a call object (1 for a top-level
	// object, 2 for objects inside a top-level array). 0 means the whole
	// top-level value is the arguments.
	callDepth int
	keyStart  int
	field     field // which field the current value at callDepth fills
	firstKey  bool  // no key seen yet in the current call object

	valStart int
	// Where the values named by evNameEnd, evArgsEnd and evDone end
	// (exclusive): after the byte, or at it for a number.
	nameEndAt, argsEndAt, doneAt int
}

type scanState uint8

const (
	sValue     scanState = iota // expecting a value
	sFirstKey                   // after '{': a key or '}'
	sFirstElem                  // after '[': a value or ']'
	sKey                        // after ',' in an object: a key
	sColon                      // after a key
	sAfter                      // after a value inside a container
	sString                     // inside a string
	sEscape                     // after a backslash in a string
	sHex                        // inside \uXXXX
	sNumber                     // inside a number
	sLiteral                    // inside true/false/null
	sDone                       // the top-level value is complete
	sError
)

type field uint8

const (
	fOther field = iota
	fName
	fArgs
)

// Events a byte can cause (several at once).
const (
	evError     = 1 << iota
	evCallStart // a call object opened (its '{' is at the byte)
	evCallEnd   // a call object closed (its '}' is at the byte)
	evFirstKey  // the first key of a call object ended; keyStart..byte+1 is it
	evNameEnd   // the name string ended (valStart..byte+1, quotes included)
	evArgsStart // the arguments value starts at valStart
	evArgsEnd   // the arguments value ends before endAt
	evDone      // the top-level value is complete
)

func (s *jsonScan) reset(callDepth int) {
	s.stack = s.stack[:0]
	s.state = sValue
	s.callDepth = callDepth
	s.field = fOther
	s.firstKey = false
}

// step consumes the byte at buf[i] and returns the events it causes. The
// values that end are recorded in nameEndAt, argsEndAt and doneAt.
func (s *jsonScan) step(buf []byte, i int) (ev int) {
	c := buf[i]
	for {
		switch s.state {
		case sValue:
			if isSpace(c) {
				return ev
			}
			if s.callDepth == 2 && len(s.stack) == 1 && c != '{' {
				// The elements of a call array must be call objects.
				return s.fail(ev)
			}
			ev |= s.valueStart(i)
			switch {
			case c == '{':
				s.stack = append(s.stack, '{')
				s.state = sFirstKey
				if len(s.stack) == s.callDepth {
					ev |= evCallStart
					s.firstKey = true
				}
			case c == '[':
				s.stack = append(s.stack, '[')
				s.state = sFirstElem
			case c == '"':
				s.isKey = false
				s.state = sString
			case c == '-' || (c >= '0' && c <= '9'):
				s.state = sNumber
			case c == 't':
				s.lit, s.state = "rue", sLiteral
			case c == 'f':
				s.lit, s.state = "alse", sLiteral
			case c == 'n':
				s.lit, s.state = "ull", sLiteral
			default:
				return s.fail(ev)
			}
			return ev
		case sFirstElem:
			if isSpace(c) {
				return ev
			}
			if c == ']' {
				return ev | s.closeContainer(i)
			}
			s.state = sValue
			continue
		case sFirstKey, sKey:
			if isSpace(c) {
				return ev
			}
			if c == '"' {
				s.isKey = true
				s.keyStart = i
				s.state = sString
				return ev
			}
			if c == '}' && s.state == sFirstKey {
				return ev | s.closeContainer(i)
			}
			return s.fail(ev)
		case sColon:
			if isSpace(c) {
				return ev
			}
			if c != ':' {
				return s.fail(ev)
			}
			s.state = sValue
			return ev
		case sAfter:
			if isSpace(c) {
				return ev
			}
			top := s.stack[len(s.stack)-1]
			switch {
			case c == ',':
				if top == '{' {
					s.state = sKey
				} else {
					s.state = sValue
				}
				if len(s.stack) == s.callDepth {
					s.field = fOther
				}
			case c == '}' && top == '{', c == ']' && top == '[':
				ev |= s.closeContainer(i)
			default:
				return s.fail(ev)
			}
			return ev
		case sString:
			switch {
			case c == '"':
				if s.isKey {
					s.state = sColon
					if len(s.stack) == s.callDepth {
						s.setKey(buf[s.keyStart+1 : i])
						if s.firstKey {
							ev |= evFirstKey
							s.firstKey = false
						}
					}
					return ev
				}
				return ev | s.valueEnd(i+1)
			case c == '\\':
				s.state = sEscape
			case c < 0x20:
				return s.fail(ev)
			}
			return ev
		case sEscape:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.state = sString
			case 'u':
				s.state, s.hex = sHex, 4
			default:
				return s.fail(ev)
			}
			return ev
		case sHex:
			if !isHex(c) {
				return s.fail(ev)
			}
			if s.hex--; s.hex == 0 {
				s.state = sString
			}
			return ev
		case sNumber:
			if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
				return ev
			}
			ev |= s.valueEnd(i)
			if s.state == sDone {
				return ev
			}
			continue // the byte after a number is read in the state that follows it
		case sLiteral:
			if c != s.lit[0] {
				return s.fail(ev)
			}
			s.lit = s.lit[1:]
			if s.lit == "" {
				ev |= s.valueEnd(i + 1)
			}
			return ev
		default: // sDone, sError
			return ev
		}
	}
}

// valueStart notes where a value begins.
func (s *jsonScan) valueStart(i int) int {
	s.valStart = i
	if s.callDepth == 0 && len(s.stack) == 0 {
		return evArgsStart
	}
	if len(s.stack) == s.callDepth && s.callDepth > 0 && s.stack[len(s.stack)-1] == '{' && s.field == fArgs {
		return evArgsStart
	}
	return 0
}

// valueEnd ends a value at end (exclusive).
func (s *jsonScan) valueEnd(end int) int {
	ev := 0
	switch {
	case len(s.stack) == 0:
		s.state = sDone
		s.doneAt = end
		ev = evDone
		if s.callDepth == 0 {
			s.argsEndAt = end
			ev |= evArgsEnd
		}
		return ev
	case len(s.stack) == s.callDepth && s.stack[len(s.stack)-1] == '{':
		switch s.field {
		case fName:
			s.nameEndAt = end
			ev = evNameEnd
		case fArgs:
			s.argsEndAt = end
			ev = evArgsEnd
		}
	}
	s.state = sAfter
	return ev
}

func (s *jsonScan) closeContainer(i int) int {
	ev := 0
	if len(s.stack) == s.callDepth && s.stack[len(s.stack)-1] == '{' {
		ev |= evCallEnd
	}
	s.stack = s.stack[:len(s.stack)-1]
	return ev | s.valueEnd(i+1)
}

func (s *jsonScan) fail(ev int) int {
	s.state = sError
	return ev | evError
}

// setKey classifies the key just read (raw bytes between the quotes).
func (s *jsonScan) setKey(key []byte) {
	switch string(key) {
	case "name":
		s.field = fName
	case "arguments", "parameters":
		s.field = fArgs
	default:
		s.field = fOther
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
