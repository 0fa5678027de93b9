package resources

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
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
	var m Memory
	var memFree, buffers, cached uint64
	var seenTotal, seenAvailable, seenFree bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Bytes()
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(bytes.TrimSpace(key)) { // no allocation: compiler-optimised conversion
		case "MemTotal":
			dst, seenTotal = &m.Total, true
		case "MemAvailable":
			dst, seenAvailable = &m.Available, true
		case "MemFree":
			dst, seenFree = &memFree, true
		case "Buffers":
			dst = &buffers
		case "Cached":
			dst = &cached
		case "SwapTotal":
			dst = &m.SwapTotal
		case "SwapFree":
			dst = &m.SwapFree
		default:
			continue
		}
		name := bytes.TrimSpace(key)
		fields := bytes.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 {
			return Memory{}, fmt.Errorf("%w: %s: %q", ErrMeminfo, name, rest)
		}
		v, err := parseUint(fields[0])
		if err != nil {
			return Memory{}, fmt.Errorf("%w: %s: %w", ErrMeminfo, name, err)
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
	}
	if err := sc.Err(); err != nil {
		return Memory{}, fmt.Errorf("%w: %w", ErrMeminfo, err)
	}
	if !seenTotal {
		return Memory{}, fmt.Errorf("%w: no MemTotal", ErrMeminfo)
	}
	if !seenAvailable {
		if !seenFree {
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

// parseUint parses a decimal uint64 without allocating.
func parseUint(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errors.New("empty number")
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not an unsigned integer", b)
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, fmt.Errorf("%s overflows", b)
		}
		v = v*10 + d
	}
	return v, nil
}

// satAdd adds without wrapping around.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
