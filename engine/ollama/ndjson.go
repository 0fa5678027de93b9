package ollama

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxLine bounds one NDJSON line. A chunk is a token or a few, the final
// one carries whole tool calls; 8 MiB is far above either and keeps a
// misbehaving peer from growing the buffer without end.
const maxLine = 8 << 20

// lineDecoder reads NDJSON strictly: every non-empty line is exactly one
// JSON object (a trailing "\r" is allowed), lines are bounded by max, and
// a last line cut off by the end of input is an error. Fields the target
// does not know are ignored: Ollama adds fields between versions.
type lineDecoder struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineDecoder(r io.Reader, max int) *lineDecoder {
	return &lineDecoder{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// errLineTooLong and errNotObject are the decoder's own refusals.
var (
	errLineTooLong = errors.New("ndjson line too long")
	errNotObject   = errors.New("ndjson line is not a JSON object")
)

// next decodes the next non-empty line into v. It returns io.EOF at a clean
// end of input, io.ErrUnexpectedEOF for a last line that is not a whole
// object, and the read error of the underlying reader as it is.
func (d *lineDecoder) next(v any) error {
	for {
		line, err := d.line()
		if err != nil && err != io.EOF {
			return err // the connection broke: what was read is not a line
		}
		if len(line) == 0 {
			if err != nil {
				return err
			}
			continue
		}
		if line[0] != '{' {
			return errNotObject
		}
		if uerr := json.Unmarshal(line, v); uerr != nil {
			var se *json.SyntaxError
			if err == io.EOF && errors.As(uerr, &se) {
				return io.ErrUnexpectedEOF
			}
			return fmt.Errorf("ndjson: %w", uerr)
		}
		return nil
	}
}

// line returns the next line without its end ("\n" or "\r\n") and with
// surrounding blanks trimmed; at the end of input it returns what is left
// with io.EOF.
func (d *lineDecoder) line() ([]byte, error) {
	d.buf = d.buf[:0]
	for {
		part, err := d.r.ReadSlice('\n')
		if len(d.buf)+len(part) > d.max+1 { // +1: the "\n" itself
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			if len(d.buf) == 0 {
				return bytes.TrimSpace(part), nil
			}
			d.buf = append(d.buf, part...)
			return bytes.TrimSpace(d.buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			d.buf = append(d.buf, part...)
		default:
			d.buf = append(d.buf, part...)
			return bytes.TrimSpace(d.buf), err
		}
	}
}
