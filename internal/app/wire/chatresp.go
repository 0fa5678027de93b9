package wire

// Finish reasons of a choice.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
)

// ChatCompletion is the body of a non-streamed chat completion.
type ChatCompletion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"` // "chat.completion"
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// Choice is the one choice of a ChatCompletion.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	Logprobs     *Logprobs       `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the assistant message of a choice. The reasoning is
// sent under both names clients read, reasoning_content and reasoning
// (NewResponseMessage fills both); content is null when the answer is only
// tool calls.
type ResponseMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	Reasoning        *string    `json:"reasoning,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	Refusal          *string    `json:"refusal"`
}

// NewResponseMessage builds an assistant message. Empty reasoning leaves
// both reasoning fields out (spec P7: no think block, no reasoning);
// content is null when there are calls and no text.
func NewResponseMessage(content, reasoning string, calls []ToolCall) ResponseMessage {
	m := ResponseMessage{Role: "assistant", ToolCalls: calls}
	if content != "" || len(calls) == 0 {
		m.Content = &content
	}
	if reasoning != "" {
		m.ReasoningContent, m.Reasoning = &reasoning, &reasoning
	}
	return m
}

// Usage is the token accounting of a completion.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// NewUsage builds a Usage; cached is the prompt prefix the engine reused.
func NewUsage(prompt, cached, completion int) *Usage {
	return &Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion,
		PromptTokensDetails: &PromptTokensDetails{CachedTokens: cached}}
}

// PromptTokensDetails is usage.prompt_tokens_details.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetails is usage.completion_tokens_details.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Logprobs is a choice's logprobs.
type Logprobs struct {
	Content []TokenLogprob `json:"content"`
	Refusal []TokenLogprob `json:"refusal"`
}

// TokenLogprob is the log probability of one token, with the most likely
// alternatives when top_logprobs asked for them. Log-probabilities are
// float32, as the engine computes them, so they encode as the shortest
// decimal that reads back as the same value.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative of a TokenLogprob.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// ChatChunk is one event of a streamed chat completion. The last chunk of
// a stream with include_usage has empty Choices and the Usage.
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is the one choice of a ChatChunk; FinishReason is null until
// the last content chunk.
type ChunkChoice struct {
	Index        int       `json:"index"`
	Delta        Delta     `json:"delta"`
	Logprobs     *Logprobs `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// Delta is what one chunk adds to the message.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is one fragment of a streamed tool call, as OpenAI streams
// them: Index always; ID, Type and the function's Name only on the first
// fragment of a call; argument text after.
type ToolCallDelta struct {
	Index    int            `json:"index"`
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type,omitempty"`
	Function *FunctionDelta `json:"function,omitempty"`
}

// FunctionDelta is the function part of a ToolCallDelta.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ToolCallStart is the first fragment of call index: id, type and name,
// with empty arguments.
func ToolCallStart(index int, id, name string) ToolCallDelta {
	return ToolCallDelta{Index: index, ID: id, Type: "function", Function: &FunctionDelta{Name: name}}
}

// ToolCallArguments is a later fragment of call index: argument text only.
func ToolCallArguments(index int, fragment string) ToolCallDelta {
	return ToolCallDelta{Index: index, Function: &FunctionDelta{Arguments: fragment}}
}

// ReasoningDelta is a delta carrying thinking text under both names.
func ReasoningDelta(piece string) Delta {
	return Delta{ReasoningContent: &piece, Reasoning: &piece}
}

// ContentDelta is a delta carrying answer text.
func ContentDelta(piece string) Delta {
	return Delta{Content: &piece}
}
