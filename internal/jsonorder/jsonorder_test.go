package jsonorder

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestPython(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x"]}`, `{"b": 1, "a": [true, null, "x"]}`},
		{`"é\n\u0001\"\\/"`, `"é\n\u0001\"\\/"`},
		{`[1.0, 2.50, 1e20, 1.5e-7, -0.0, 100]`, `[1.0, 2.5, 1e+20, 1.5e-07, -0.0, 100]`},
		{`{}`, `{}`},
		{`{"k":{"z":[],"y":{}}}`, `{"k": {"z": [], "y": {}}}`},
	}
	for _, c := range cases {
		v, err := Parse([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := v.Python(); got != c.want {
			t.Errorf("Python(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if _, err := Parse([]byte(`{} 1`)); err == nil {
		t.Error("trailing data accepted")
	}
}

// FuzzParse: whatever Parse accepts (with numbers that fit a float64), its
// Python form is JSON that means the same as the input.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"x\u00e9"`, `[1e5,-2.5]`, `true`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		var a, b any
		if json.Unmarshal(data, &a) != nil {
			return // a number beyond float64: Python would print inf, not JSON
		}
		if err := json.Unmarshal([]byte(v.Python()), &b); err != nil {
			t.Fatalf("Python form %q of %q is not JSON: %v", v.Python(), data, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q became %q", data, v.Python())
		}
	})
}
