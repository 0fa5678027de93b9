package main

import (
	"errors"
	"flag"
	"io"
	"testing"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"-model", "m"}, true},
		{[]string{"-model", "m", "-device", "cuda", "-threads", "2", "-runs", "1", "-prefill-chunk", "0", "-json"}, true},
		{[]string{}, false},
		{[]string{"-model", "m", "-device", "gpu"}, false},
		{[]string{"-model", "m", "-runs", "0"}, false},
		{[]string{"-model", "m", "extra"}, false},
	}
	for _, c := range cases {
		_, err := parseFlags(c.args, io.Discard)
		if (err == nil) != c.ok {
			t.Errorf("%v: err %v", c.args, err)
		}
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5}, // even count: the mean of the two middles
		{[]float64{10, 20}, 15},
	} {
		if m := median(c.in); m != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, m, c.want)
		}
	}
	if peakRSSMiB() <= 0 {
		t.Skip("no /proc/self/status here")
	}
}
