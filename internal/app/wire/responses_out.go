package wire

import (
	"encoding/json"
)

// Response statuses.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// Response is the body of a Responses API answer, and the response of its
// lifecycle events.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *ErrorObject       `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          *ReasoningConfig   `json:"reasoning,omitempty"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	Text               *TextConfig        `json:"text,omitempty"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []ResponseTool     `json:"tools"`
	TopP               *float64           `json:"top_p"`
	TopLogprobs        *int               `json:"top_logprobs"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	Metadata           map[string]string  `json:"metadata"`
}

// NewResponse returns an in-progress response echoing the request's
// settings, with no output yet.
func NewResponse(id string, createdAt int64, req *ResponsesRequest) *Response {
	r := &Response{
		ID: id, Object: "response", CreatedAt: createdAt, Status: StatusInProgress, Model: req.Model,
		Output: []OutputItem{}, ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		MaxOutputTokens: req.MaxOutputTokens, Temperature: req.Temperature, TopP: req.TopP, TopLogprobs: req.TopLogprobs,
		Reasoning: req.Reasoning, Text: req.Text, ToolChoice: req.ToolChoice, Tools: req.Tools,
		Truncation: "disabled", Metadata: map[string]string{},
	}
	if req.Instructions != "" {
		r.Instructions = &req.Instructions
	}
	if len(r.ToolChoice) == 0 {
		r.ToolChoice = json.RawMessage(`"auto"`)
	}
	if r.Tools == nil {
		r.Tools = []ResponseTool{}
	}
	if r.Text == nil || r.Text.Format == nil {
		text := TextConfig{Format: &TextFormat{Type: "text"}}
		if req.Text != nil {
			text.Verbosity = req.Text.Verbosity
		}
		r.Text = &text
	}
	return r
}

// IncompleteDetails says why a response is incomplete:
// "max_output_tokens".
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseUsage is the token accounting of a response.
type ResponseUsage struct {
	InputTokens         int                     `json:"input_tokens"`
	InputTokensDetails  PromptTokensDetails     `json:"input_tokens_details"`
	OutputTokens        int                     `json:"output_tokens"`
	OutputTokensDetails CompletionTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                     `json:"total_tokens"`
}

// NewResponseUsage builds a ResponseUsage; cached is the prompt prefix the
// engine reused, reasoning the output tokens that were thinking.
func NewResponseUsage(input, cached, output, reasoning int) *ResponseUsage {
	return &ResponseUsage{InputTokens: input, InputTokensDetails: PromptTokensDetails{CachedTokens: cached},
		OutputTokens: output, OutputTokensDetails: CompletionTokensDetails{ReasoningTokens: reasoning},
		TotalTokens: input + output}
}

// Output item types.
const (
	ItemMessage      = "message"
	ItemReasoning    = "reasoning"
	ItemFunctionCall = "function_call"
)

// OutputItem is one item of a response's output: an assistant message
// (Content of output_text parts), a reasoning item (Content of
// reasoning_text parts, an empty Summary) or a function_call. It is written
// with exactly the fields of its type.
type OutputItem struct {
	Type      string
	ID        string
	Status    string
	Content   []OutputPart
	CallID    string
	Name      string
	Arguments string
}

// MarshalJSON writes the fields of the item's type.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	content := it.Content
	if content == nil {
		content = []OutputPart{}
	}
	switch it.Type {
	case ItemMessage:
		return json.Marshal(struct {
			Type    string       `json:"type"`
			ID      string       `json:"id"`
			Status  string       `json:"status"`
			Role    string       `json:"role"`
			Content []OutputPart `json:"content"`
		}{it.Type, it.ID, it.Status, "assistant", content})
	case ItemReasoning:
		return json.Marshal(struct {
			Type    string       `json:"type"`
			ID      string       `json:"id"`
			Status  string       `json:"status,omitempty"`
			Summary []OutputPart `json:"summary"`
			Content []OutputPart `json:"content"`
		}{it.Type, it.ID, it.Status, []OutputPart{}, content})
	}
	return json.Marshal(struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Status    string `json:"status"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}{it.Type, it.ID, it.Status, it.CallID, it.Name, it.Arguments})
}

// Events of a streamed response, in the order they come: created,
// in_progress; per item output_item.added, (for text) content_part.added,
// the deltas, output_text.done / reasoning_text.done, content_part.done,
// (for calls) function_call_arguments.delta and .done, output_item.done;
// last completed (or incomplete, or failed). Each carries sequence_number,
// counted from 0 by an EventSeq.
const (
	EventCreated        = "response.created"
	EventInProgress     = "response.in_progress"
	EventCompleted      = "response.completed"
	EventIncomplete     = "response.incomplete"
	EventFailed         = "response.failed"
	EventItemAdded      = "response.output_item.added"
	EventItemDone       = "response.output_item.done"
	EventPartAdded      = "response.content_part.added"
	EventPartDone       = "response.content_part.done"
	EventTextDelta      = "response.output_text.delta"
	EventTextDone       = "response.output_text.done"
	EventReasoningDelta = "response.reasoning_text.delta"
	EventReasoningDone  = "response.reasoning_text.done"
	EventArgumentsDelta = "response.function_call_arguments.delta"
	EventArgumentsDone  = "response.function_call_arguments.done"
	EventError          = "error"
)

// Event is one typed event: its name (the SSE event: line, equal to the
// payload's type) and its payload.
type Event struct {
	Name string
	Data any
}

// EventSeq numbers the events of one stream.
type EventSeq struct{ next int }

func (s *EventSeq) n() int { n := s.next; s.next++; return n }

// ResponseEvent is the payload of the lifecycle events.
type ResponseEvent struct {
	Type           string    `json:"type"`
	SequenceNumber int       `json:"sequence_number"`
	Response       *Response `json:"response"`
}

// ItemEvent is the payload of output_item.added and output_item.done.
type ItemEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	OutputIndex    int        `json:"output_index"`
	Item           OutputItem `json:"item"`
}

// PartEvent is the payload of content_part.added and content_part.done.
type PartEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Part           OutputPart `json:"part"`
}

// TextEvent is the payload of output_text.delta, reasoning_text.delta
// (Delta) and of output_text.done, reasoning_text.done (Text). The
// output_text events always carry Logprobs (the delta's tokens, or the
// whole text's), an empty list when none were asked for; the reasoning
// events have none.
type TextEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	ItemID         string         `json:"item_id"`
	OutputIndex    int            `json:"output_index"`
	ContentIndex   int            `json:"content_index"`
	Delta          *string        `json:"delta,omitempty"`
	Text           *string        `json:"text,omitempty"`
	Logprobs       []TokenLogprob `json:"logprobs,omitzero"`
}

// ArgumentsEvent is the payload of function_call_arguments.delta (Delta)
// and .done (Name and Arguments).
type ArgumentsEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	ItemID         string  `json:"item_id"`
	OutputIndex    int     `json:"output_index"`
	Delta          *string `json:"delta,omitempty"`
	Name           string  `json:"name,omitempty"`
	Arguments      *string `json:"arguments,omitempty"`
}

// ErrorEvent is the payload of an error after the stream began.
type ErrorEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}

// Lifecycle returns a created, in_progress, completed, incomplete or
// failed event. The response is copied, so later changes to r do not reach
// an event already built.
func (s *EventSeq) Lifecycle(name string, r *Response) Event {
	cp := *r
	cp.Output = append([]OutputItem(nil), r.Output...)
	if cp.Output == nil {
		cp.Output = []OutputItem{}
	}
	return Event{name, ResponseEvent{Type: name, SequenceNumber: s.n(), Response: &cp}}
}

// Item returns an output_item.added or output_item.done event.
func (s *EventSeq) Item(name string, index int, item OutputItem) Event {
	return Event{name, ItemEvent{Type: name, SequenceNumber: s.n(), OutputIndex: index, Item: item}}
}

// Part returns a content_part.added or content_part.done event.
func (s *EventSeq) Part(name, itemID string, index, content int, part OutputPart) Event {
	return Event{name, PartEvent{Type: name, SequenceNumber: s.n(), ItemID: itemID, OutputIndex: index, ContentIndex: content, Part: part}}
}

// TextDelta returns an output_text.delta or reasoning_text.delta event;
// an output_text.delta carries logprobs, the entries of the delta's tokens
// (an empty list for nil).
func (s *EventSeq) TextDelta(name, itemID string, index, content int, delta string, logprobs []TokenLogprob) Event {
	e := TextEvent{Type: name, SequenceNumber: s.n(), ItemID: itemID, OutputIndex: index, ContentIndex: content, Delta: &delta}
	if name == EventTextDelta {
		e.Logprobs = listOf(logprobs)
	}
	return Event{name, e}
}

// TextDone returns an output_text.done or reasoning_text.done event with
// the whole text; an output_text.done carries logprobs, the entries of
// the whole text (an empty list for nil).
func (s *EventSeq) TextDone(name, itemID string, index, content int, text string, logprobs []TokenLogprob) Event {
	e := TextEvent{Type: name, SequenceNumber: s.n(), ItemID: itemID, OutputIndex: index, ContentIndex: content, Text: &text}
	if name == EventTextDone {
		e.Logprobs = listOf(logprobs)
	}
	return Event{name, e}
}

// listOf returns l, or an empty list for nil: written as [], not left out.
func listOf(l []TokenLogprob) []TokenLogprob {
	if l == nil {
		return []TokenLogprob{}
	}
	return l
}

// ArgumentsDelta returns a function_call_arguments.delta event.
func (s *EventSeq) ArgumentsDelta(itemID string, index int, delta string) Event {
	return Event{EventArgumentsDelta, ArgumentsEvent{Type: EventArgumentsDelta, SequenceNumber: s.n(), ItemID: itemID, OutputIndex: index, Delta: &delta}}
}

// ArgumentsDone returns a function_call_arguments.done event with the
// function's name and whole arguments.
func (s *EventSeq) ArgumentsDone(itemID string, index int, name, arguments string) Event {
	return Event{EventArgumentsDone, ArgumentsEvent{Type: EventArgumentsDone, SequenceNumber: s.n(), ItemID: itemID, OutputIndex: index, Name: name, Arguments: &arguments}}
}

// Error returns an error event, for a failure after the stream began.
func (s *EventSeq) Error(code, param, message string) Event {
	return Event{EventError, ErrorEvent{Type: EventError, SequenceNumber: s.n(), Code: nullable(code), Message: message, Param: nullable(param)}}
}
