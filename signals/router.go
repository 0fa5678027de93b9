package signals

import (
	"context"
	"encoding/json"
	"github.com/prism-local/prism/errcode"
	"sync"
	"time"
)

// The verbs the [Router] implements itself. Agents register their own with
// [Router.Handle]; every registered verb is bootstrapped and piggybacks.
const (
	// VerbStart registers a new session for the caller's identity. Lifecycle
	// verb: its response has no pending_signals key (ADR-25).
	VerbStart = "start"
	// VerbCheckpoint persists session state through the agent's handler.
	// Lifecycle verb: no pending_signals key.
	VerbCheckpoint = "checkpoint"
	// VerbWrap ends the session. Lifecycle verb: no pending_signals key; call
	// VerbPending first for last-chance delivery (SPEC-041 §3).
	VerbWrap = "wrap"
	// VerbHeartbeat keeps a session alive; it never drains (SPEC-037 §1).
	VerbHeartbeat = "heartbeat"
	// VerbPending is the explicit poll (SPEC-037 §4): it drains with
	// delivery method poll.
	VerbPending = "pending"
	// VerbPickup (hd_exec) continues the caller's session, or begins one,
	// and drains: a pickup inherits unread messages (ADR-25 §3).
	VerbPickup = "hd_exec"
	// VerbSend queues a signal from the caller's identity; args are a
	// [Message] without From.
	VerbSend = "send"
	// VerbAck confirms deliveries; args are {"delivery_ids": [...]}.
	VerbAck = "ack"
)

// IsLifecycleVerb reports whether verb is one of the session-lifecycle
// verbs start, checkpoint and wrap (SPEC-041 §1).
func IsLifecycleVerb(verb string) bool {
	return verb == VerbStart || verb == VerbCheckpoint || verb == VerbWrap
}

// Piggybacks reports whether a response to verb carries pending_signals:
// every bootstrapped verb except the lifecycle verbs and the heartbeat.
func Piggybacks(verb string) bool { return !IsLifecycleVerb(verb) && verb != VerbHeartbeat }

// Request is one verb call.
type Request struct {
	// Verb names the verb.
	Verb string `json:"verb"`
	// Identity is the calling agent's identity. Required.
	Identity string `json:"identity"`
	// Session is the caller's session id, from start or hd_exec. Required by
	// every verb except start and hd_exec.
	Session string `json:"session,omitempty"`
	// Args are the verb's JSON arguments.
	Args json.RawMessage `json:"args,omitempty"`
	// Ack lists delivery ids the caller confirms having received.
	Ack []string `json:"ack,omitempty"`
}

// Call is a request as a [Handler] sees it, with its session resolved.
type Call struct {
	Request
	// SessionInfo is the caller's session (for start, the new one).
	SessionInfo Session
}

// Handler runs one agent verb and returns its JSON-marshalable result.
type Handler func(ctx context.Context, c *Call) (any, error)

// Response is a verb's response.
type Response struct {
	// Verb is the verb called.
	Verb string
	// Session is the caller's session id.
	Session string
	// Result is the handler's result.
	Result any
	// Piggyback says whether the response carries the pending_signals key.
	// It is false for lifecycle verbs and the heartbeat, whose responses
	// have no such key at all.
	Piggyback bool
	// PendingSignals holds the drained signals, merged with the in-process
	// buffer and de-duplicated by signal id.
	PendingSignals []Signal
	// PendingError reports a drain that failed after the verb itself
	// succeeded; nothing was taken from the queue then.
	PendingError string
}

// MarshalJSON writes {"verb","session","result"} plus "pending_signals"
// (always an array) only when the response piggybacks.
func (r Response) MarshalJSON() ([]byte, error) {
	m := map[string]any{"verb": r.Verb, "result": r.Result}
	if r.Session != "" {
		m["session"] = r.Session
	}
	if r.Piggyback {
		p := r.PendingSignals
		if p == nil {
			p = []Signal{}
		}
		m["pending_signals"] = p
		if r.PendingError != "" {
			m["pending_signals_error"] = r.PendingError
		}
	}
	return json.Marshal(m)
}

// Buffer is an in-process strategy buffer (for example a subscriber's)
// whose signals the router merges into piggybacked responses (SPEC-037 §3).
type Buffer interface {
	// Take removes and returns the buffered signals for identity.
	Take(identity string) []Signal
}

// RouterConfig configures a [Router].
type RouterConfig struct {
	// Store holds signals and sessions. Required.
	Store Store
	// Mode is the delivery mode, LeaseAndAck by default.
	Mode Mode
	// Lease is the lease of a LeaseAndAck drain; default DefaultLease.
	Lease time.Duration
	// Limit caps the signals one response carries; default DefaultLimit.
	Limit int
	// Buffer, if set, is merged into every piggybacked response.
	Buffer Buffer
	// OnResponse, if set, observes every successful response after its
	// drain and before Call returns it (for logging and metrics).
	OnResponse func(ctx context.Context, c *Call, r *Response)
}

// Router wraps an agent's verbs: it resolves sessions, runs the verb, and
// drains the caller's signals into the response of every bootstrapped verb
// except the lifecycle verbs and the heartbeat (SPEC-037 §1, ADR-25).
//
// In LeaseAndAck mode a delivery is confirmed by an explicit ack (the ack
// verb or Request.Ack) or by the next call in the same session that begins
// after the router returned the response carrying it.
type Router struct {
	cfg      RouterConfig
	queue    *Queue
	mu       sync.Mutex
	handlers map[string]Handler
	unacked  map[string][]string // session -> delivery ids handed out
}

// NewRouter returns a router over cfg.Store.
func NewRouter(cfg RouterConfig) (*Router, error) {
	if cfg.Store == nil {
		return nil, Errorf(CodeInvalidArgument, "router", "a store is required")
	}
	if cfg.Mode != LeaseAndAck && cfg.Mode != MarkOnDrain {
		return nil, Errorf(CodeInvalidArgument, "router", "unknown mode %d", cfg.Mode)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Limit <= 0 {
		cfg.Limit = DefaultLimit
	}
	return &Router{cfg: cfg, queue: NewQueue(cfg.Store), handlers: map[string]Handler{}, unacked: map[string][]string{}}, nil
}

// Queue returns the router's queue.
func (r *Router) Queue() *Queue { return r.queue }

// Handle registers the agent's handler for verb. For start, checkpoint,
// wrap and hd_exec the handler runs inside the router's own handling; send,
// ack, pending and heartbeat cannot be overridden.
func (r *Router) Handle(verb string, h Handler) error {
	switch {
	case verb == "" || h == nil:
		return Errorf(CodeInvalidArgument, "handle", "verb and handler are required")
	case verb == VerbSend || verb == VerbAck || verb == VerbPending || verb == VerbHeartbeat:
		return Errorf(CodeInvalidArgument, "handle", "verb %q is built in", verb)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[verb]; ok {
		return Errorf(CodeAlreadyExists, "handle", "verb %q already has a handler", verb)
	}
	r.handlers[verb] = h
	return nil
}

func (r *Router) handler(verb string) (Handler, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.handlers[verb]
	return h, ok
}

func (r *Router) known(verb string) bool {
	switch verb {
	case VerbStart, VerbCheckpoint, VerbWrap, VerbHeartbeat, VerbPending, VerbPickup, VerbSend, VerbAck:
		return true
	}
	_, ok := r.handler(verb)
	return ok
}

// Call runs one verb call. Handler errors are returned unchanged; no signal
// is drained for a failed verb.
func (r *Router) Call(ctx context.Context, req Request) (*Response, error) {
	if req.Identity == "" {
		return nil, Errorf(CodeInvalidArgument, "call", "caller identity is required")
	}
	if !r.known(req.Verb) {
		return nil, Errorf(CodeUnknownVerb, "call", "unknown verb %q", req.Verb)
	}
	c := &Call{Request: req}
	var err error
	switch req.Verb {
	case VerbStart:
		c.SessionInfo, err = r.newSession(ctx, req.Identity)
	case VerbPickup:
		c.SessionInfo, err = r.pickup(ctx, req)
	default:
		c.SessionInfo, err = r.session(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	if req.Verb != VerbStart {
		if err := r.confirm(ctx, c); err != nil {
			return nil, err
		}
	}
	resp := &Response{Verb: req.Verb, Session: c.SessionInfo.ID, Piggyback: Piggybacks(req.Verb)}
	resp.Result, err = r.run(ctx, c)
	if err != nil {
		if req.Verb == VerbStart {
			_ = r.cfg.Store.EndSession(context.WithoutCancel(ctx), c.SessionInfo.ID)
		}
		return nil, err
	}
	if req.Verb == VerbWrap {
		if err := r.cfg.Store.EndSession(ctx, c.SessionInfo.ID); err != nil {
			return nil, err
		}
		r.mu.Lock()
		delete(r.unacked, c.SessionInfo.ID)
		r.mu.Unlock()
	}
	var delivery string
	if resp.Piggyback {
		delivery = r.drain(ctx, c, resp)
	}
	if r.cfg.OnResponse != nil {
		r.cfg.OnResponse(ctx, c, resp)
	}
	if delivery != "" {
		// Only a call that begins after this one returned confirms it.
		r.mu.Lock()
		r.unacked[c.SessionInfo.ID] = append(r.unacked[c.SessionInfo.ID], delivery)
		r.mu.Unlock()
	}
	return resp, nil
}

func (r *Router) newSession(ctx context.Context, identity string) (Session, error) {
	s := Session{ID: NewID(), Identity: identity, StartedAt: time.Now().UTC()}
	if err := r.cfg.Store.CreateSession(ctx, s); err != nil {
		return Session{}, err
	}
	return s, nil
}

func (r *Router) session(ctx context.Context, req Request) (Session, error) {
	if req.Session == "" {
		return Session{}, Errorf(CodeNotBootstrapped, req.Verb, "no session: call %s (or %s) first", VerbStart, VerbPickup)
	}
	s, err := r.cfg.Store.Session(ctx, req.Session)
	if err != nil {
		if errcode.Of(err) == CodeNotFound {
			return Session{}, &Error{code: CodeNotBootstrapped, Op: req.Verb, Msg: "unknown session; call start first", Err: err}
		}
		return Session{}, err
	}
	if s.Identity != req.Identity {
		return Session{}, Errorf(CodeIdentityMismatch, req.Verb, "session %s belongs to another identity", s.ID)
	}
	if !s.Active() {
		return Session{}, Errorf(CodeSessionEnded, req.Verb, "session %s has been wrapped; call start for a new one", s.ID)
	}
	return s, nil
}

func (r *Router) pickup(ctx context.Context, req Request) (Session, error) {
	if req.Session != "" {
		s, err := r.session(ctx, req)
		if err == nil {
			return s, nil
		}
		if c := errcode.Of(err); c != CodeSessionEnded && c != CodeNotBootstrapped {
			return Session{}, err
		}
	}
	return r.newSession(ctx, req.Identity)
}

// confirm acks the deliveries this session was handed by earlier calls, and
// the ones the request lists.
func (r *Router) confirm(ctx context.Context, c *Call) error {
	r.mu.Lock()
	ids := r.unacked[c.SessionInfo.ID]
	delete(r.unacked, c.SessionInfo.ID)
	r.mu.Unlock()
	ids = append(ids, c.Ack...)
	if len(ids) == 0 {
		return nil
	}
	if _, err := r.queue.Ack(ctx, c.Identity, ids...); err != nil {
		r.mu.Lock()
		r.unacked[c.SessionInfo.ID] = append(r.unacked[c.SessionInfo.ID], ids...)
		r.mu.Unlock()
		return err
	}
	return nil
}

func (r *Router) run(ctx context.Context, c *Call) (any, error) {
	switch c.Verb {
	case VerbHeartbeat, VerbPending:
		return nil, nil
	case VerbSend:
		var m Message
		if err := json.Unmarshal(c.Args, &m); err != nil {
			return nil, &Error{code: CodeInvalidArgument, Op: VerbSend, Msg: "args must be a JSON message {to, type, payload}", Err: err}
		}
		m.From = c.Identity
		return r.queue.Send(ctx, m)
	case VerbAck:
		var a struct {
			DeliveryIDs []string `json:"delivery_ids"`
		}
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return nil, &Error{code: CodeInvalidArgument, Op: VerbAck, Msg: `args must be {"delivery_ids": [...]}`, Err: err}
		}
		n, err := r.queue.Ack(ctx, c.Identity, a.DeliveryIDs...)
		if err != nil {
			return nil, err
		}
		return map[string]int{"confirmed": n}, nil
	}
	if h, ok := r.handler(c.Verb); ok {
		return h(ctx, c)
	}
	return nil, nil // start, checkpoint, wrap, hd_exec without an agent handler
}

// drain fills resp's pending signals and returns the delivery id to confirm
// later, or "".
func (r *Router) drain(ctx context.Context, c *Call, resp *Response) string {
	method := MethodPiggyback
	switch c.Verb {
	case VerbPending:
		method = MethodPoll
	case VerbPickup:
		method = MethodStartupDrain
	}
	got, err := r.queue.Drain(ctx, c.Identity, DrainOptions{Method: method, Mode: r.cfg.Mode, Lease: r.cfg.Lease, Limit: r.cfg.Limit})
	if err != nil {
		resp.PendingError = err.Error()
	}
	var delivery string
	if r.cfg.Mode == LeaseAndAck && len(got) > 0 {
		delivery = got[0].DeliveryID
	}
	if r.cfg.Buffer != nil {
		got = append(got, r.cfg.Buffer.Take(c.Identity)...)
	}
	resp.PendingSignals = Dedupe(got)
	return delivery
}

// Dedupe returns sigs without repeated signal ids, keeping the first of
// each, in order. Clients use it to merge at-least-once deliveries.
func Dedupe(sigs []Signal) []Signal {
	seen := make(map[string]bool, len(sigs))
	out := make([]Signal, 0, len(sigs))
	for _, s := range sigs {
		if !seen[s.ID] {
			seen[s.ID] = true
			out = append(out, s)
		}
	}
	return out
}
