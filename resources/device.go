package resources

import (
	"fmt"
	"strconv"
	"strings"
)

// Device is where a model runs: the CPU, or CUDA device Index.
type Device struct {
	// CUDA is true for a CUDA device, false for the CPU.
	CUDA bool
	// Index is the CUDA device number (cuda:N); 0 on the CPU.
	Index int
}

// ParseDevice accepts "cpu", "cuda" (device 0) and "cuda:N". An empty
// string means "cpu".
func ParseDevice(s string) (Device, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); {
	case s == "" || s == "cpu":
		return Device{}, nil
	case s == "cuda" || s == "gpu":
		return Device{CUDA: true}, nil
	case strings.HasPrefix(s, "cuda:"):
		n, err := strconv.Atoi(s[len("cuda:"):])
		if err != nil || n < 0 {
			return Device{}, fmt.Errorf("device %q: want cpu, cuda or cuda:N", s)
		}
		return Device{CUDA: true, Index: n}, nil
	}
	return Device{}, fmt.Errorf("device %q: want cpu, cuda or cuda:N", s)
}

// String is "cpu" or "cuda:N".
func (d Device) String() string {
	if !d.CUDA {
		return "cpu"
	}
	return "cuda:" + strconv.Itoa(d.Index)
}
