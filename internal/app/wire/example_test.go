package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/prism-local/prism/internal/app/wire"
)

func ExampleDecodeChat() {
	_, err := wire.DecodeChat([]byte(`{"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}`))
	var we *wire.Error
	if errors.As(err, &we) {
		body, _ := json.Marshal(we.Body())
		fmt.Println(we.Status, string(body))
	}
	// Output:
	// 400 {"error":{"message":"n = 2 is not supported: this server returns one choice per request","type":"invalid_request_error","code":"unsupported_parameter","param":"n"}}
}

func ExampleChunkEncoder() {
	enc := wire.NewChunkEncoder("chatcmpl-1", "qwen", 1764547200)
	var buf []byte
	buf = enc.AppendContent(buf[:0], "Hello")
	fmt.Println(string(buf))
	// Output:
	// {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764547200,"model":"qwen","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}
}
