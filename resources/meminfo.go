package resources

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// MeminfoPath is where Linux reports memory.
const MeminfoPath = "/proc/meminfo"

// Memory is host memory as /proc/meminfo reports it, in bytes.
type Memory struct {
	// Total is MemTotal.
	Total uint64
	// Available is MemAvailable: what can be allocated without swapping.
	Available uint64
	// AvailableEstimated is true on kernels without MemAvailable, where
	// Available is MemFree + Buffers + Cached instead.
	AvailableEstimated bool
	// SwapTotal and SwapFree describe swap.
	SwapTotal, SwapFree uint64
}

// ErrMeminfo reports /proc/meminfo content that cannot be used.
var ErrMeminfo = errors.New("unusable meminfo")

// ParseMeminfo reads the /proc/meminfo format: "Key:   value [kB]" lines.
// It needs MemTotal and either MemAvailable or MemFree; unknown keys,
// blank lines and malformed lines of keys it does not use are ignored.
// Values of the keys it uses must be unsigned integers with no unit or kB.
func ParseMeminfo(r io.Reader) (Memory, error) {
	want := map[string]*uint64{}
	var m Memory
	var memFree, buffers, cached uint64
	want["MemTotal"] = &m.Total
	want["MemAvailable"] = &m.Available
	want["SwapTotal"] = &m.SwapTotal
	want["SwapFree"] = &m.SwapFree
	want["MemFree"] = &memFree
	want["Buffers"] = &buffers
	want["Cached"] = &cached
	seen := map[string]bool{}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Bytes()
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		dst, used := want[string(bytes.TrimSpace(key))]
		if !used {
			continue
		}
		name := string(bytes.TrimSpace(key))
		fields := bytes.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 {
			return Memory{}, fmt.Errorf("%w: %s: %q", ErrMeminfo, name, rest)
		}
		v, err := strconv.ParseUint(string(fields[0]), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("%w: %s: %v", ErrMeminfo, name, err)
		}
		if len(fields) == 2 {
			if !bytes.EqualFold(fields[1], []byte("kB")) {
				return Memory{}, fmt.Errorf("%w: %s: unit %q", ErrMeminfo, name, fields[1])
			}
			if v > math.MaxUint64/1024 {
				return Memory{}, fmt.Errorf("%w: %s: %d kB overflows", ErrMeminfo, name, v)
			}
			v *= 1024
		}
		*dst = v
		seen[name] = true
	}
	if err := sc.Err(); err != nil {
		return Memory{}, fmt.Errorf("%w: %v", ErrMeminfo, err)
	}
	if !seen["MemTotal"] {
		return Memory{}, fmt.Errorf("%w: no MemTotal", ErrMeminfo)
	}
	if !seen["MemAvailable"] {
		if !seen["MemFree"] {
			return Memory{}, fmt.Errorf("%w: neither MemAvailable nor MemFree", ErrMeminfo)
		}
		m.Available = satAdd(satAdd(memFree, buffers), cached)
		m.AvailableEstimated = true
	}
	return m, nil
}

// ReadMemory reads /proc/meminfo.
func ReadMemory() (Memory, error) {
	f, err := os.Open(MeminfoPath)
	if err != nil {
		return Memory{}, fmt.Errorf("reading host memory: %w", err)
	}
	defer f.Close()
	return ParseMeminfo(f)
}

// satAdd adds without wrapping around.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
