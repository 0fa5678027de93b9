package utf8seq

import (
	"testing"
	"unicode/utf8"
)

// Tail agrees with the standard library on every two-byte prefix: a lead
// byte and a first continuation byte start a valid sequence exactly when
// Tail admits them.
func TestTailAgreesWithUTF8(t *testing.T) {
	for lead := range 256 {
		need, lo, hi := Tail(byte(lead))
		for next := range 256 {
			// Complete the sequence with continuation bytes and ask utf8.
			seq := []byte{byte(lead), byte(next)}
			for len(seq) < need+1 {
				seq = append(seq, 0x80)
			}
			valid := need > 0 && utf8.FullRune(seq) && func() bool { r, n := utf8.DecodeRune(seq); return r != utf8.RuneError && n == need+1 }()
			admitted := need > 0 && byte(next) >= lo && byte(next) <= hi
			if valid != admitted {
				t.Fatalf("lead %#x next %#x: Tail admits %v, utf8 says %v", lead, next, admitted, valid)
			}
		}
	}
}
