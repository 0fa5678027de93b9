package resources_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/prism-local/prism/resources"
)

const realMeminfo = `MemTotal:       24576000 kB
MemFree:         1000000 kB
MemAvailable:   12000000 kB
Buffers:          200000 kB
Cached:          5000000 kB
SwapCached:            0 kB
SwapTotal:       8388604 kB
SwapFree:        8000000 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
`

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    resources.Memory
		wantErr bool
	}{
		{name: "real", in: realMeminfo, want: resources.Memory{
			Total: 24576000 * 1024, Available: 12000000 * 1024, SwapTotal: 8388604 * 1024, SwapFree: 8000000 * 1024}},
		{name: "old kernel without MemAvailable", in: "MemTotal: 100 kB\nMemFree: 10 kB\nBuffers: 5 kB\nCached: 20 kB\n",
			want: resources.Memory{Total: 100 * 1024, Available: 35 * 1024, AvailableEstimated: true}},
		{name: "no swap lines", in: "MemTotal: 100 kB\nMemAvailable: 50 kB\n", want: resources.Memory{Total: 100 * 1024, Available: 50 * 1024}},
		{name: "tabs and blank lines and junk", in: "\n\ngarbage line\nMemTotal:\t100\tkB\nMemAvailable:50 kB\nWeird: x y z\n", want: resources.Memory{Total: 100 * 1024, Available: 50 * 1024}},
		{name: "unitless value", in: "MemTotal: 100\nMemAvailable: 50\n", want: resources.Memory{Total: 100, Available: 50}},
		{name: "no MemTotal", in: "MemAvailable: 50 kB\n", wantErr: true},
		{name: "nothing available", in: "MemTotal: 50 kB\n", wantErr: true},
		{name: "negative", in: "MemTotal: -5 kB\nMemAvailable: 1 kB\n", wantErr: true},
		{name: "wrong unit", in: "MemTotal: 5 MB\nMemAvailable: 1 kB\n", wantErr: true},
		{name: "overflow", in: "MemTotal: 18446744073709551615 kB\nMemAvailable: 1 kB\n", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resources.ParseMeminfo(strings.NewReader(tt.in))
			if tt.wantErr {
				if !errors.Is(err, resources.ErrMeminfo) {
					t.Fatalf("err = %v, want ErrMeminfo", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestReadMemoryOnThisMachine(t *testing.T) {
	m, err := resources.ReadMemory()
	if err != nil {
		// Only a system without /proc/meminfo may skip: on Linux a read or
		// parse failure is exactly what this test is for.
		if runtime.GOOS == "linux" {
			t.Fatal(err)
		}
		t.Skipf("no /proc/meminfo here: %v", err)
	}
	if m.Total == 0 || m.Available == 0 || m.Available > m.Total {
		t.Fatalf("implausible reading %+v", m)
	}
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add([]byte(realMeminfo))
	f.Add([]byte("MemTotal: 1 kB\nMemFree: 18446744073709551615\nBuffers: 18446744073709551615\n"))
	f.Add([]byte("MemTotal:: 1 kB\nMemAvailable 3\n"))
	f.Add([]byte("MemTotal: 1 KB\nMemAvailable: 0 kb\nSwapFree: 9 kB extra\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := resources.ParseMeminfo(strings.NewReader(string(data)))
		if err != nil {
			if !errors.Is(err, resources.ErrMeminfo) {
				t.Fatalf("error %v does not wrap ErrMeminfo", err)
			}
			return
		}
		if !m.AvailableEstimated && !strings.Contains(string(data), "MemAvailable") {
			t.Fatalf("Available not marked estimated without MemAvailable")
		}
	})
}

func BenchmarkParseMeminfo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := resources.ParseMeminfo(strings.NewReader(realMeminfo)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadMemory(b *testing.B) {
	if _, err := resources.ReadMemory(); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := resources.ReadMemory(); err != nil {
			b.Fatal(err)
		}
	}
}
