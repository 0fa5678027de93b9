package tokenizer_test

import (
	"fmt"
	"os"

	"github.com/prism-local/prism/engine/tokenizer"
)

// The examples use the small byte-level tokenizer in testdata/tiny; real
// model folders (tokenizer.json + tokenizer_config.json) load the same way.
const tinyDir = "testdata/tiny"

func ExampleLoad() {
	tok, err := tokenizer.Load(tinyDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	ids := tok.Encode("Hello world!<|end|>")
	fmt.Println(ids)
	fmt.Println(tok.EncodeWithSpecial("Hello"))
	fmt.Println(tok.Decode(ids, false))
	fmt.Printf("%q\n", tok.Decode(ids, true))
	// Output:
	// [259 264 33 269]
	// [268 259]
	// Hello world!<|end|>
	// "Hello world!"
}

func ExampleTokenizer_NewDecoder() {
	tok, err := tokenizer.Load(tinyDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	ids := tok.Encode("Hello 👋🏽")
	d := tok.NewDecoder(true)
	var out []byte
	for _, id := range ids {
		n := len(out)
		out = d.Append(out, id)
		fmt.Printf("%d -> %q\n", id, out[n:])
	}
	out = d.Flush(out)
	fmt.Println(string(out))
	// Output:
	// 259 -> "Hello"
	// 32 -> " "
	// 240 -> ""
	// 159 -> ""
	// 145 -> ""
	// 139 -> "👋"
	// 240 -> ""
	// 159 -> ""
	// 143 -> ""
	// 189 -> "🏽"
	// Hello 👋🏽
}
