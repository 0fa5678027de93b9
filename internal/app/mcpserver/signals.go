package mcpserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/signals"
)

// The signals verbs as MCP tools, and the router verb each one calls.
const (
	toolStart      = "prism_start"
	toolCheckpoint = "prism_checkpoint"
	toolWrap       = "prism_wrap"
	toolPending    = "prism_signals_pending"
	toolSend       = "prism_send_signal"
	toolStatus     = "prism_status"
	toolPickup     = "hd_exec"

	verbStatus = "status" // the agent verb behind prism_status
)

// wrapNote is SPEC-041 §3's note, carried by prism_wrap's description.
const wrapNote = "Consider calling prism_signals_pending immediately before prism_wrap if you want last-chance delivery " +
	"of any signals queued during the session. The wrap itself does not drain."

// StartIn is prism_start's input.
type StartIn struct {
	Identity string `json:"identity" jsonschema:"your agent identity, the name other agents send signals to"`
}

// PickupIn is hd_exec's input.
type PickupIn struct {
	Identity string `json:"identity,omitempty" jsonschema:"your agent identity; omitted: the one this MCP session started with"`
	Session  string `json:"session,omitempty" jsonschema:"the session to continue; omitted: this MCP session's, else a new one"`
}

// SessionIn is the input of the verbs that act in a started session.
type SessionIn struct {
	Session string `json:"session,omitempty" jsonschema:"the session id prism_start or hd_exec returned; needed only where the connection keeps no MCP session (stateless HTTP)"`
}

// CheckpointIn is prism_checkpoint's input.
type CheckpointIn struct {
	Session string `json:"session,omitempty" jsonschema:"the session id prism_start or hd_exec returned; needed only where the connection keeps no MCP session (stateless HTTP)"`
	Note    string `json:"note,omitempty" jsonschema:"a short note on where the work stands, echoed back"`
}

// SendIn is prism_send_signal's input.
type SendIn struct {
	Session        string `json:"session,omitempty" jsonschema:"the session id prism_start or hd_exec returned; needed only where the connection keeps no MCP session (stateless HTTP)"`
	To             string `json:"to" jsonschema:"the recipient's identity"`
	Type           string `json:"type" jsonschema:"the signal's type, chosen by the agents"`
	Payload        any    `json:"payload,omitempty" jsonschema:"any JSON value"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key that makes a repeated send return the first signal"`
}

// SignalView is one delivered signal.
type SignalView struct {
	ID             string `json:"id"`
	From           string `json:"from"`
	To             string `json:"to"`
	Type           string `json:"type"`
	Payload        any    `json:"payload" jsonschema:"the signal's JSON payload"`
	CreatedAt      string `json:"created_at"`
	DeliveryMethod string `json:"delivery_method"`
	DeliveryID     string `json:"delivery_id"`
	Attempts       int    `json:"attempts"`
}

// LifecycleOut is the result of prism_start, prism_checkpoint and
// prism_wrap: it has no pending_signals key, ever (SPEC-041 §1).
type LifecycleOut struct {
	Verb     string `json:"verb"`
	Identity string `json:"identity"`
	Session  string `json:"session"`
	Result   any    `json:"result" jsonschema:"the verb's own result"`
}

// PiggybackOut is the result of every other verb: pending_signals is
// always there, an empty array when nothing was queued (SPEC-037 §1).
type PiggybackOut struct {
	Verb                string       `json:"verb"`
	Identity            string       `json:"identity"`
	Session             string       `json:"session"`
	Result              any          `json:"result" jsonschema:"the verb's own result"`
	PendingSignals      []SignalView `json:"pending_signals"`
	PendingSignalsError string       `json:"pending_signals_error,omitempty" jsonschema:"a drain that failed after the verb succeeded; nothing was taken from the queue"`
}

func (s *Server) addSignalTools() error {
	if err := s.router.Handle(verbStatus, s.verbStatus); err != nil {
		return err
	}
	for verb, h := range map[string]signals.Handler{
		signals.VerbStart:      stamp("started_at"),
		signals.VerbCheckpoint: s.verbCheckpoint,
		signals.VerbWrap:       stamp("ended_at"),
		signals.VerbPickup:     s.verbPickup,
	} {
		if err := s.router.Handle(verb, h); err != nil {
			return err
		}
	}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: toolStart, Title: "Start a signals session",
		Description: "Starts a session for your identity; call it (or hd_exec) before the other prism_* tools. " +
			"It is a lifecycle verb: it never returns pending signals (SPEC-041). Call prism_signals_pending or any other verb to receive them."},
		s.start)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: toolCheckpoint, Title: "Checkpoint the session",
		Description: "Confirms the session is live and echoes a note on where the work stands. A lifecycle verb: it never returns pending signals."},
		func(ctx context.Context, req *mcp.CallToolRequest, in CheckpointIn) (*mcp.CallToolResult, LifecycleOut, error) {
			args, _ := json.Marshal(map[string]string{"note": in.Note})
			return s.lifecycle(ctx, req, signals.VerbCheckpoint, in.Session, args)
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: toolWrap, Title: "End the session",
		Description: "Ends the session. A lifecycle verb: it never returns pending signals. " + wrapNote},
		func(ctx context.Context, req *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, LifecycleOut, error) {
			return s.lifecycle(ctx, req, signals.VerbWrap, in.Session, nil)
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: toolPending, Title: "Receive pending signals",
		Description: "Returns the signals queued for your identity (an explicit poll)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, PiggybackOut, error) {
			return s.piggyback(ctx, req, signals.VerbPending, in.Session, nil)
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: toolSend, Title: "Send a signal",
		Description: "Queues a signal from your identity to another agent's; it is delivered on the recipient's next verb other than " +
			"prism_start, prism_checkpoint and prism_wrap. Also returns your own pending signals."},
		func(ctx context.Context, req *mcp.CallToolRequest, in SendIn) (*mcp.CallToolResult, PiggybackOut, error) {
			payload, err := json.Marshal(in.Payload)
			if err != nil {
				return nil, PiggybackOut{}, invalid("payload: %v", err)
			}
			args, _ := json.Marshal(signals.Message{To: in.To, Type: in.Type, Payload: payload, IdempotencyKey: in.IdempotencyKey})
			return s.piggyback(ctx, req, signals.VerbSend, in.Session, args)
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: toolStatus, Title: "Session status",
		Description: "Reports your session and the depth of your signal queue, and returns your pending signals."},
		func(ctx context.Context, req *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, PiggybackOut, error) {
			return s.piggyback(ctx, req, verbStatus, in.Session, nil)
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: toolPickup, Title: "Pick up a session",
		Description: "Continues your session (or starts one) and returns the signals queued for your identity: a pickup inherits unread messages."},
		s.pickup)
	return nil
}

// stamp is a lifecycle handler that reports when it ran.
func stamp(key string) signals.Handler {
	return func(context.Context, *signals.Call) (any, error) {
		return map[string]string{key: time.Now().UTC().Format(time.RFC3339Nano)}, nil
	}
}

func (s *Server) verbCheckpoint(_ context.Context, c *signals.Call) (any, error) {
	var a struct {
		Note string `json:"note"`
	}
	_ = json.Unmarshal(c.Args, &a)
	return map[string]string{"checkpointed_at": time.Now().UTC().Format(time.RFC3339Nano), "note": a.Note}, nil
}

func (s *Server) verbPickup(_ context.Context, c *signals.Call) (any, error) {
	return map[string]any{"resumed": c.Session != "" && c.Session == c.SessionInfo.ID,
		"started_at": c.SessionInfo.StartedAt.Format(time.RFC3339Nano)}, nil
}

func (s *Server) verbStatus(ctx context.Context, c *signals.Call) (any, error) {
	d, err := s.router.Queue().Depth(ctx, c.Identity)
	if err != nil {
		return nil, err
	}
	return map[string]any{"started_at": c.SessionInfo.StartedAt.Format(time.RFC3339Nano),
		"queue": map[string]int{"pending": d.Pending, "leased": d.Leased}}, nil
}

func (s *Server) start(ctx context.Context, req *mcp.CallToolRequest, in StartIn) (*mcp.CallToolResult, LifecycleOut, error) {
	if in.Identity == "" {
		return nil, LifecycleOut{}, invalid("identity is required")
	}
	resp, err := s.router.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: in.Identity})
	if err != nil {
		return nil, LifecycleOut{}, toolErr(err)
	}
	s.setCaller(req.Session, caller{identity: in.Identity, session: resp.Session})
	return nil, LifecycleOut{Verb: toolStart, Identity: in.Identity, Session: resp.Session, Result: resp.Result}, nil
}

func (s *Server) pickup(ctx context.Context, req *mcp.CallToolRequest, in PickupIn) (*mcp.CallToolResult, PiggybackOut, error) {
	c, _ := s.callerOf(req.Session)
	identity, session := in.Identity, in.Session
	if identity == "" {
		identity = c.identity
	}
	if session == "" && identity == c.identity {
		session = c.session
	}
	if identity == "" {
		return nil, PiggybackOut{}, invalid("identity is required (this MCP session has not started one)")
	}
	resp, err := s.router.Call(ctx, signals.Request{Verb: signals.VerbPickup, Identity: identity, Session: session})
	if err != nil {
		return nil, PiggybackOut{}, toolErr(err)
	}
	s.setCaller(req.Session, caller{identity: identity, session: resp.Session})
	return nil, piggybackOut(toolPickup, identity, resp), nil
}

// resolve finds the caller of a verb: the explicit session's owner, else
// the identity this MCP session started with.
func (s *Server) resolve(ctx context.Context, ss *mcp.ServerSession, session string) (caller, error) {
	if session != "" {
		sess, err := s.cfg.Store.Session(ctx, session)
		if err != nil {
			if errcode.Of(err) == errcode.NotFound {
				return caller{}, &toolError{code: errcode.NotBootstrapped, msg: "unknown session " + session + "; call prism_start first", err: err}
			}
			return caller{}, toolErr(err)
		}
		return caller{identity: sess.Identity, session: sess.ID}, nil
	}
	c, ok := s.callerOf(ss)
	if !ok {
		return caller{}, &toolError{code: errcode.NotBootstrapped, msg: "no session: call prism_start (or hd_exec) with your identity first"}
	}
	return c, nil
}

func (s *Server) lifecycle(ctx context.Context, req *mcp.CallToolRequest, verb, session string, args json.RawMessage) (*mcp.CallToolResult, LifecycleOut, error) {
	c, err := s.resolve(ctx, req.Session, session)
	if err != nil {
		return nil, LifecycleOut{}, err
	}
	resp, err := s.router.Call(ctx, signals.Request{Verb: verb, Identity: c.identity, Session: c.session, Args: args})
	if err != nil {
		return nil, LifecycleOut{}, toolErr(err)
	}
	if verb == signals.VerbWrap {
		if cur, ok := s.callerOf(req.Session); ok && cur.session == c.session {
			s.setCaller(req.Session, caller{})
		}
	}
	return nil, LifecycleOut{Verb: "prism_" + verb, Identity: c.identity, Session: resp.Session, Result: resp.Result}, nil
}

func (s *Server) piggyback(ctx context.Context, req *mcp.CallToolRequest, verb, session string, args json.RawMessage) (*mcp.CallToolResult, PiggybackOut, error) {
	c, err := s.resolve(ctx, req.Session, session)
	if err != nil {
		return nil, PiggybackOut{}, err
	}
	resp, err := s.router.Call(ctx, signals.Request{Verb: verb, Identity: c.identity, Session: c.session, Args: args})
	if err != nil {
		return nil, PiggybackOut{}, toolErr(err)
	}
	name := map[string]string{signals.VerbPending: toolPending, signals.VerbSend: toolSend, verbStatus: toolStatus}[verb]
	return nil, piggybackOut(name, c.identity, resp), nil
}

func piggybackOut(tool, identity string, resp *signals.Response) PiggybackOut {
	out := PiggybackOut{Verb: tool, Identity: identity, Session: resp.Session, Result: resp.Result,
		PendingSignals: []SignalView{}, PendingSignalsError: resp.PendingError}
	for _, sig := range resp.PendingSignals {
		var payload any
		if len(sig.Payload) > 0 {
			_ = json.Unmarshal(sig.Payload, &payload)
		}
		out.PendingSignals = append(out.PendingSignals, SignalView{ID: sig.ID, From: sig.From, To: sig.To, Type: sig.Type,
			Payload: payload, CreatedAt: sig.CreatedAt.Format(time.RFC3339Nano), DeliveryMethod: string(sig.DeliveryMethod),
			DeliveryID: sig.DeliveryID, Attempts: sig.Attempts})
	}
	return out
}
