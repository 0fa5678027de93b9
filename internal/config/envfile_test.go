package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/config"
)

func TestParseEnvFile(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []config.Entry
		wantErr    string
	}{
		{name: "empty"},
		{name: "comments and blanks", text: "# c\n\n   \n  # indented\r\n"},
		{name: "plain", text: "A=1\r\n  B = two words  \nexport C=3\n", want: []config.Entry{
			{Key: "A", Value: "1", Line: 1}, {Key: "B", Value: "two words", Line: 2}, {Key: "C", Value: "3", Line: 3}}},
		{name: "hash in an unquoted value", text: "A=x#y # z\n", want: []config.Entry{{Key: "A", Value: "x#y # z", Line: 1}}},
		{name: "quoted", text: `A=" keep  # this "  # comment` + "\n" + `B="say \"hi\" \\ \n"` + "\nC=\"\"\nD=",
			want: []config.Entry{{Key: "A", Value: " keep  # this ", Line: 1}, {Key: "B", Value: `say "hi" \ \n`, Line: 2},
				{Key: "C", Value: "", Line: 3}, {Key: "D", Value: "", Line: 4}}},
		{name: "equals in the value", text: "A=b=c\n", want: []config.Entry{{Key: "A", Value: "b=c", Line: 1}}},
		{name: "no equals", text: "A=1\nB\n", wantErr: `line 2: no "=": want KEY=VALUE`},
		{name: "bad key", text: "1A=1\n", wantErr: `line 1: "1A" is not a variable name`},
		{name: "dash in key", text: "A-B=1\n", wantErr: `line 1: "A-B" is not a variable name`},
		{name: "empty key", text: "=1\n", wantErr: `line 1: "" is not a variable name`},
		{name: "twice", text: "A=1\n\nA=2\n", wantErr: "line 3: A is set again (first on line 1)"},
		{name: "unterminated", text: `A="open` + "\n", wantErr: "line 1: A: no closing quote"},
		{name: "after the quote", text: `A="x" secret` + "\n", wantErr: `line 1: A: text after the closing quote`},
		{name: "NUL", text: "A=\x00\n", wantErr: "line 1: NUL byte"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := config.ParseEnvFile([]byte(c.text))
			if c.wantErr != "" {
				var fe *config.EnvFileError
				if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("ParseEnvFile = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// FuzzParseEnvFile checks that the parser never panics, that what it
// accepts is a set of valid variables, and that writing the entries back
// quoted reads them back unchanged.
func FuzzParseEnvFile(f *testing.F) {
	for _, s := range []string{
		"", "A=1\n", "export A=\" x \" # c\n", `B="a\"b\\c"`, "# only\n\n", "A=1\nA=2", "x y=1", "A=\"\n",
		"PRISM_DEVICE=cuda\r\nPRISM_THREADS=4\r\n", "A=\"x\"#c\nB=#", "\ufeffA=1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := config.ParseEnvFile(data)
		if err != nil {
			return
		}
		var b strings.Builder
		seen := map[string]bool{}
		for _, e := range entries {
			if seen[e.Key] || strings.ContainsAny(e.Value, "\n\x00") || e.Line < 1 {
				t.Fatalf("bad entry %+v", e)
			}
			seen[e.Key] = true
			b.WriteString(e.Key + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e.Value) + "\"\n")
		}
		again, err := config.ParseEnvFile([]byte(b.String()))
		if err != nil {
			t.Fatalf("written back %q: %v", b.String(), err)
		}
		if len(again) != len(entries) {
			t.Fatalf("written back: %d entries, had %d", len(again), len(entries))
		}
		for i := range again {
			if again[i].Key != entries[i].Key || again[i].Value != entries[i].Value {
				t.Fatalf("written back: %+v, had %+v", again[i], entries[i])
			}
		}
	})
}
