package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Holder describes a process that holds the load lock or keeps a model
// resident. Its JSON form {"pid", "model", "since"} is the on-disk metadata
// and the shape of error.holder in HTTP errors.
type Holder struct {
	// PID is the holder's process id.
	PID int `json:"pid"`
	// Model names the model the holder is loading or keeps loaded.
	Model string `json:"model"`
	// Since is when the holder took the lock or became resident.
	Since time.Time `json:"since,omitzero"`
}

// String describes the holder for messages: "pid 1234 (model qwen)".
func (h Holder) String() string {
	if h.Model == "" {
		return fmt.Sprintf("pid %d", h.PID)
	}
	return fmt.Sprintf("pid %d (model %s)", h.PID, h.Model)
}

// errBadMetadata marks a metadata record that cannot be used.
var errBadMetadata = errors.New("invalid holder metadata")

// decodeHolder parses one metadata record. It accepts only a JSON object with
// a positive pid; unknown fields are ignored so newer writers stay readable.
func decodeHolder(data []byte) (Holder, error) {
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return Holder{}, fmt.Errorf("%w: %w", errBadMetadata, err)
	}
	if h.PID <= 0 {
		return Holder{}, fmt.Errorf("%w: pid %d", errBadMetadata, h.PID)
	}
	return h, nil
}

// blankRecord is what a released lock file holds: spaces, no holder.
var blankRecord = func() (b [RecordSize]byte) {
	for i := range b {
		b[i] = ' '
	}
	return b
}()

// writeRecord writes h at the start of the lock file as one fixed-size
// record. A model name too long for the record is shortened.
func writeRecord(f *os.File, h Holder) error {
	var buf [RecordSize]byte
	for {
		data, err := json.Marshal(h)
		if err != nil {
			return err
		}
		if len(data) <= RecordSize {
			n := copy(buf[:], data)
			copy(buf[n:], blankRecord[n:])
			break
		}
		h.Model = strings.ToValidUTF8(h.Model[:len(h.Model)/2], "")
	}
	_, err := f.WriteAt(buf[:], 0)
	return err
}

// readRecord reads the holder record from the lock file. A torn read (the
// holder writing at the same moment) fails to parse; it is read again a few
// times before giving up.
func readRecord(f *os.File) (Holder, error) {
	var buf [RecordSize]byte
	var err error
	for range 3 {
		var n int
		n, err = f.ReadAt(buf[:], 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return Holder{}, err
		}
		data := bytes.TrimRight(buf[:n], " \x00")
		if len(data) == 0 {
			return Holder{}, fmt.Errorf("%w: empty record", errBadMetadata)
		}
		var h Holder
		if h, err = decodeHolder(data); err == nil {
			return h, nil
		}
	}
	return Holder{}, err
}
