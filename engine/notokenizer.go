package engine

import "fmt"

// NoTokenizerError reports a request that needs text to go through a
// tokenizer on a model loaded without one: a prompt as text, or stop
// strings. Requests as token ids (Request.PromptIDs) work on such a model.
// errors.As also reads it as an *InvalidRequestError naming Param, so code
// that maps request errors (a server's 400) needs nothing more.
type NoTokenizerError struct {
	// Model is the model as the caller named it.
	Model string
	// File is the tokenizer file that could not be read.
	File string
	// Param is the request field that needs the tokenizer ("prompt" or
	// "stop"); "" when the error is not a request's.
	Param string
	// Err is why the file could not be read.
	Err error
}

// Error names the model, the missing file and what to send instead.
func (e *NoTokenizerError) Error() string {
	msg := fmt.Sprintf("model %q was loaded without a tokenizer (%s: %v)", e.Model, e.File, e.Err)
	switch e.Param {
	case "prompt":
		msg += ": a prompt as text needs it; send token ids (PromptIDs)"
	case "stop":
		msg += ": stop strings are matched on decoded text and need it"
	}
	return msg
}

// Unwrap returns why the file could not be read.
func (e *NoTokenizerError) Unwrap() error { return e.Err }

// Code returns invalid_request_error: the request asks for what the
// model, as loaded, cannot do.
func (e *NoTokenizerError) Code() string { return CodeInvalidRequest }

// ParamName returns Param.
func (e *NoTokenizerError) ParamName() string { return e.Param }

// As fills an *InvalidRequestError target with Param and the message.
func (e *NoTokenizerError) As(target any) bool {
	if t, ok := target.(**InvalidRequestError); ok {
		*t = &InvalidRequestError{Param: e.Param, Message: e.Error()}
		return true
	}
	return false
}

// NoTokenizer returns the Tokenizer of a model loaded without tokenizer
// files, for New: it encodes and decodes nothing, and the Engine refuses a
// request with text in it (a prompt, stop strings) with a copy of missing
// naming the request's field. Generated tokens then carry their ids and
// empty pieces.
func NoTokenizer(missing *NoTokenizerError) Tokenizer { return noTokenizer{missing} }

type noTokenizer struct{ missing *NoTokenizerError }

func (noTokenizer) Encode(string) []int32               { return nil }
func (noTokenizer) Decode([]int32, bool) string         { return "" }
func (noTokenizer) NewStreamDecoder(bool) StreamDecoder { return noDecoder{} }
func (noTokenizer) EOS() []int32                        { return nil }
func (t noTokenizer) refuse(param string) *NoTokenizerError {
	e := *t.missing
	e.Param = param
	return &e
}

type noDecoder struct{}

func (noDecoder) Append(dst []byte, _ int32) []byte { return dst }
func (noDecoder) Flush(dst []byte) []byte           { return dst }
func (noDecoder) Reset()                            {}

// needsTokenizer returns the error of a request with text in it on a
// model loaded without a tokenizer, nil otherwise.
func (e *Engine) needsTokenizer(req Request) error {
	nt, ok := e.tok.(noTokenizer)
	switch {
	case !ok:
		return nil
	case req.Prompt != "":
		return nt.refuse("prompt")
	case len(req.Stop) > 0:
		return nt.refuse("stop")
	}
	return nil
}
