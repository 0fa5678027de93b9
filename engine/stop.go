package engine

import "bytes"

// stopper matches stop strings across token boundaries. Text goes in as the
// decoder produces it; what comes out is the text that can no longer be part
// of a stop string. At most (longest stop - 1) bytes are held back.
type stopper struct {
	stops [][]byte
	hold  []byte
}

func (s *stopper) reset(stops []string) {
	s.stops = s.stops[:0]
	for _, st := range stops {
		s.stops = append(s.stops, []byte(st))
	}
	s.hold = s.hold[:0]
}

// push adds text and appends to out what may be emitted. matched is the index
// of the stop string found (text from its start on is dropped), or -1.
func (s *stopper) push(out, text []byte) (_ []byte, matched int) {
	if len(s.stops) == 0 {
		return append(out, text...), -1
	}
	s.hold = append(s.hold, text...)
	at, which := -1, -1
	for i, st := range s.stops {
		if j := bytes.Index(s.hold, st); j >= 0 && (at < 0 || j < at) {
			at, which = j, i
		}
	}
	if which >= 0 {
		out = append(out, s.hold[:at]...)
		s.hold = s.hold[:0]
		return out, which
	}
	keep := 0
	for _, st := range s.stops {
		for k := min(len(st)-1, len(s.hold)); k > keep; k-- {
			if bytes.HasSuffix(s.hold, st[:k]) {
				keep = k
				break
			}
		}
	}
	cut := len(s.hold) - keep
	out = append(out, s.hold[:cut]...)
	s.hold = s.hold[:copy(s.hold, s.hold[cut:])]
	return out, -1
}

// flush appends the held-back text to out.
func (s *stopper) flush(out []byte) []byte {
	out = append(out, s.hold...)
	s.hold = s.hold[:0]
	return out
}
