package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/prism-local/prism/internal/app/jsonrpc"
	"github.com/prism-local/prism/signals"
)

// executor names the agent in the execution tree's records.
const executor = "prism-acp"

// budgetNote ends a prompt whose tool rounds ran out.
const budgetNote = "\n\n[Prism: tool loop budget exhausted after %d rounds; the turn ends here]"

// prompt validates a session/prompt request and starts it; the answer is
// sent when it ends. A validation error is returned to be answered at once.
func (a *agent) prompt(m *jsonrpc.Message) error {
	var p struct {
		SessionID json.RawMessage `json:"sessionId"`
		Prompt    json.RawMessage `json:"prompt"`
	}
	if err := object(m.Params, &p); err != nil {
		return err
	}
	s, err := a.session(p.SessionID)
	if err != nil {
		return err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(a.base)
	if !s.begin(stop) {
		stop()
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "a prompt is already in progress for this session")
	}
	root := a.nextRoot(s, m.ID)
	if _, err := a.tree.Begin(context.Background(), root, s.id, executor); err != nil {
		s.end()
		stop()
		return err
	}
	a.log.Debug("acp session/prompt accepted", "session", s.id, "id", string(m.ID), "root", root)
	a.prompts.Add(1)
	go func() {
		defer a.prompts.Done()
		defer stop()
		a.finish(m.ID, s, root, a.turn(ctx, s, root, text))
	}()
	return nil
}

// promptText joins the text blocks; any other block type is refused.
func promptText(raw json.RawMessage) (string, error) {
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil || blocks == nil {
		return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "prompt must be an array of content blocks")
	}
	var parts []string
	for i, b := range blocks {
		var blk struct {
			Type *string `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(b, &blk) != nil || blk.Type == nil {
			return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "prompt[%d] must be an object with a type", i)
		}
		if *blk.Type != "text" {
			return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "prompt[%d]: content type %q is not supported; send text", i, clip(*blk.Type))
		}
		if blk.Text == nil {
			return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "prompt[%d]: a text block needs text", i)
		}
		parts = append(parts, *blk.Text)
	}
	return strings.Join(parts, "\n"), nil
}

// outcome is how a prompt ended.
type outcome struct {
	stop string
	err  error
}

// finish records the root's outcome, waits for the exact tree to be
// complete (PLAT-095) and answers the request.
func (a *agent) finish(id json.RawMessage, s *session, root string, o outcome) {
	rec := signals.Outcome{State: signals.Succeeded}
	switch {
	case o.err != nil:
		rec = signals.Outcome{State: signals.Failed, Detail: o.err.Error()}
	case o.stop == StopCancelled:
		rec = signals.Outcome{State: signals.Canceled}
	}
	bg := context.Background()
	if _, err := a.tree.Record(bg, root, executor, rec); err != nil {
		a.log.Error("recording the prompt's outcome", "root", root, "err", err)
	}
	if _, err := a.tree.Wait(bg, root); err != nil && !errors.Is(err, signals.ErrTurnFailed) {
		a.log.Error("waiting for the prompt's tree", "root", root, "err", err)
	}
	// The session is free before the answer leaves: a client may send its
	// next prompt the moment it reads this one's.
	s.end()
	if o.err != nil {
		a.log.Warn("acp session/prompt failed", "session", s.id, "err", o.err)
		_ = a.conn.ReplyError(id, &jsonrpc.Error{Number: jsonrpc.CodeServer, Message: o.err.Error()})
		return
	}
	a.log.Debug("acp session/prompt finished", "session", s.id, "stop", o.stop)
	_ = a.conn.Reply(id, promptResult{StopReason: o.stop})
}

// turn runs the model and its tool calls for one prompt. On an error the
// history is put back as it was before the prompt, so no user turn is left
// unanswered; on a cancel the partial answer (perhaps empty) is kept as the
// assistant's turn.
func (a *agent) turn(ctx context.Context, s *session, root, text string) outcome {
	model, msgs := s.history()
	before := len(msgs)
	msgs = append(msgs, Message{Role: "user", Content: text})
	offered := a.tools()
	var used int
	defer func() { a.update(s.id, usageUpdate{SessionUpdate: "usage_update", Used: used, Size: a.size(model)}) }()
	for round := 0; ; round++ {
		if round == MaxToolRounds {
			a.update(s.id, chunkUpdate{SessionUpdate: "agent_message_chunk", Content: textBlock(fmt.Sprintf(budgetNote, MaxToolRounds))})
			s.setHistory(append(msgs, Message{Role: "assistant", Content: ""}))
			return outcome{stop: StopEndTurn}
		}
		if ctx.Err() != nil {
			s.setHistory(append(msgs, Message{Role: "assistant"}))
			return outcome{stop: StopCancelled}
		}
		var streamed strings.Builder
		ans, err := a.cfg.Generator.Generate(ctx, model, msgs, offered, func(d Delta) error {
			if d.Reasoning != "" {
				a.update(s.id, chunkUpdate{SessionUpdate: "agent_thought_chunk", Content: textBlock(d.Reasoning)})
			}
			if d.Content != "" {
				streamed.WriteString(d.Content)
				a.update(s.id, chunkUpdate{SessionUpdate: "agent_message_chunk", Content: textBlock(d.Content)})
			}
			return nil
		})
		used = ans.Usage.PromptTokens + ans.Usage.CompletionTokens
		if ctx.Err() != nil {
			s.setHistory(append(msgs, Message{Role: "assistant", Content: streamed.String()}))
			return outcome{stop: StopCancelled}
		}
		if err != nil {
			s.setHistory(msgs[:before])
			return outcome{err: fmt.Errorf("generation with %s failed: %w", model, err)}
		}
		if len(ans.ToolCalls) == 0 {
			s.setHistory(append(msgs, Message{Role: "assistant", Content: ans.Content}))
			return outcome{stop: StopEndTurn}
		}
		msgs = append(msgs, Message{Role: "assistant", Content: ans.Content, ToolCalls: ans.ToolCalls})
		for i, call := range ans.ToolCalls {
			result, cancelled := a.runTool(ctx, s, root, call, offered)
			if cancelled {
				// Answer every call of the round, so the history stays a
				// valid conversation for the next prompt.
				for _, c := range ans.ToolCalls[i:] {
					msgs = append(msgs, Message{Role: "tool", ToolCallID: c.ID, Content: "cancelled by the user"})
				}
				s.setHistory(append(msgs, Message{Role: "assistant"}))
				return outcome{stop: StopCancelled}
			}
			msgs = append(msgs, Message{Role: "tool", ToolCallID: call.ID, Content: result})
		}
	}
}

func (a *agent) size(model string) int {
	if a.cfg.ContextSize == nil {
		return 0
	}
	return a.cfg.ContextSize(model)
}
