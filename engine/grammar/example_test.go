package grammar_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
	"github.com/prism-local/prism/engine/grammar"
)

// byteTokenizerVocab is the vocabulary of enginetest's byte tokenizer:
// ids 0-255 are the bytes, EOS and BOS add no text.
func byteTokenizerVocab() *grammar.Vocabulary {
	pieces := make([][]byte, enginetest.ByteVocab)
	for b := range 256 {
		pieces[b] = []byte{byte(b)}
	}
	return grammar.NewVocabularyFromPieces(pieces, nil)
}

// A request carries the compiled schema as its Constraint; every token the
// schema does not allow is masked, and EOS only comes once the value is
// complete. (The scripted model here happens to answer in JSON.)
func ExampleCompiler_Schema() {
	eng, err := enginetest.New(`{"ok": true}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	compiler := grammar.NewCompiler(byteTokenizerVocab(), 0)
	g, err := compiler.Schema([]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},
		"required":["ok"],"additionalProperties":false}`), grammar.Options{Strict: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	text, res, err := eng.Generate(context.Background(), engine.Request{Prompt: "weather?", MaxTokens: 64, Constraint: g})
	fmt.Println(text, res.FinishReason, err)
	// Output: {"ok": true} stop <nil>
}

// A keyword the grammar cannot enforce fails a strict compile with a typed
// error naming it; without Strict it becomes a warning.
func ExampleCompileSchema_strict() {
	v := byteTokenizerVocab()
	schema := []byte(`{"type":"number","multipleOf":0.25}`)
	_, err := grammar.CompileSchema(v, schema, grammar.Options{Strict: true})
	var se *grammar.SchemaError
	if errors.As(err, &se) {
		fmt.Println(se.Code(), se.Param, se.Keyword)
	}
	g, _ := grammar.CompileSchema(v, schema, grammar.Options{})
	fmt.Println(g.Warnings()[0].Keyword)
	// Output:
	// invalid_request_error response_format multipleOf
	// multipleOf
}

// Length bounds hold inside a pattern, counted in characters of the
// decoded string: the escape \n is one.
func ExampleCompileSchema_lengthWithPattern() {
	schema := []byte(`{"type":"string","pattern":"^[a-z\\n]+$","maxLength":3}`)
	g, err := grammar.CompileSchema(byteTokenizerVocab(), schema, grammar.Options{Strict: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, text := range []string{`"abc"`, `"a\nb"`, `"abcd"`, `"a\n\nb"`} {
		m := g.Start()
		fmt.Println(text, m.AdvanceBytes([]byte(text)) && m.CanEnd())
	}
	// Output:
	// "abc" true
	// "a\nb" true
	// "abcd" false
	// "a\n\nb" false
}

// JSON mode: any JSON object.
func ExampleJSONObject() {
	g, _ := grammar.JSONObject(byteTokenizerVocab(), grammar.Options{})
	m := g.Start()
	fmt.Println(m.AdvanceBytes([]byte(`{"a": [1, {"b": null}]}`)), m.CanEnd())
	fmt.Println(g.Start().AdvanceBytes([]byte(`[1]`)))
	// Output:
	// true true
	// false
}
