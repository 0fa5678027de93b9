package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/prism-local/prism/internal/app/jsonrpc"
	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/memory"
)

// DefaultFallbackModel is the model a session gets when no model is
// installed and PRISM_ACP_MODEL is unset (spec P16); its absence surfaces
// on the first prompt as a generation error.
const DefaultFallbackModel = "Phi-4-mini-instruct-cuda-gpu"

// Config is what an agent generates with.
type Config struct {
	// Generator runs the generations. Required.
	Generator Generator
	// Model is PRISM_ACP_MODEL: the model of new sessions; "" picks one.
	Model string
	// ContextSize returns a model's context window for usage_update; nil
	// or 0 when unknown.
	ContextSize func(model string) int
	// Version is reported in agentInfo.
	Version string
	// Logger receives the lifecycle logs; nil for slog.Default.
	Logger *slog.Logger
}

// capabilities are the client's, captured at initialize.
type capabilities struct {
	readTextFile, writeTextFile bool
}

// agent is the state of one connection.
type agent struct {
	cfg  Config
	log  *slog.Logger
	conn *jsonrpc.Conn
	tree *signals.Tree
	base context.Context // ends when the connection does

	mu       sync.Mutex
	caps     capabilities
	sessions map[string]*session
	roots    int
	prompts  sync.WaitGroup
}

// Serve runs the agent on one connection until in ends or ctx is done.
// Prompts still running are then cancelled and waited for; their pending
// client requests fail with jsonrpc.ErrClosed.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if cfg.Generator == nil {
		return errors.New("acp: a Generator is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &agent{cfg: cfg, log: cfg.Logger, conn: jsonrpc.NewConn(in, out, cfg.Logger),
		tree: signals.NewTree(memory.New()), base: ctx, sessions: map[string]*session{}}
	err := a.conn.Serve(ctx, a.handle)
	cancel() // the client is gone: stop what it asked for
	a.prompts.Wait()
	return err
}

// handle routes one request or notification. Handlers validate the shape
// they read and say so with -32602; any other failure is -32603 (spec P16).
func (a *agent) handle(ctx context.Context, m *jsonrpc.Message) {
	a.log.Debug("acp dispatch", "method", m.Method, "id", string(m.ID))
	if m.IsNotification() {
		if m.Method == "session/cancel" {
			a.cancel(m.Params)
		}
		return // unknown notifications are dropped
	}
	var result any
	var err error
	switch m.Method {
	case "initialize":
		result, err = a.initialize(m.Params)
	case "session/new":
		result, err = a.newSession(ctx, m.Params)
	case "session/set_config_option":
		result, err = a.setConfig(m.Params)
	case "session/prompt":
		if err = a.prompt(m); err == nil {
			return // answered when the prompt ends
		}
	default:
		err = jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %s", clip(m.Method))
	}
	a.answer(m.ID, result, err)
}

func (a *agent) answer(id json.RawMessage, result any, err error) {
	if err == nil {
		_ = a.conn.Reply(id, result)
		return
	}
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		a.log.Error("acp internal error", "id", string(id), "err", err)
		rpc = jsonrpc.Errorf(jsonrpc.CodeInternal, "internal error: %v", err)
	}
	_ = a.conn.ReplyError(id, rpc)
}

// object decodes params, which must be a JSON object (absent is {}).
func object(params json.RawMessage, v any) error {
	p := strings.TrimSpace(string(params))
	if p == "" || p == "null" {
		p = "{}"
	}
	if p[0] != '{' {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params must be an object")
	}
	if err := json.Unmarshal([]byte(p), v); err != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func (a *agent) initialize(params json.RawMessage) (any, error) {
	var p initializeParams
	if err := object(params, &p); err != nil {
		return nil, err
	}
	version := ProtocolVersion
	// A version that is not a positive integer is treated as absent.
	var n json.Number
	if d := json.NewDecoder(strings.NewReader(string(p.ProtocolVersion))); len(p.ProtocolVersion) > 0 {
		d.UseNumber()
		var v any
		if d.Decode(&v) == nil {
			n, _ = v.(json.Number)
		}
	}
	if i, err := n.Int64(); err == nil && i > 0 && !strings.ContainsAny(n.String(), ".eE") && i < ProtocolVersion {
		version = int(i)
	}
	var c capabilities
	if cc := p.ClientCapabilities; cc != nil && cc.FS != nil {
		c = capabilities{readTextFile: cc.FS.ReadTextFile, writeTextFile: cc.FS.WriteTextFile}
	}
	a.mu.Lock()
	a.caps = c
	a.mu.Unlock()
	res := initializeResult{ProtocolVersion: version, AuthMethods: []any{},
		AgentInfo: implementation{Name: "prism", Title: "Prism", Version: a.cfg.Version}}
	return res, nil
}

func (a *agent) capabilities() capabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}

func (a *agent) session(id json.RawMessage) (*session, error) {
	var sid string
	if len(id) == 0 || json.Unmarshal(id, &sid) != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "sessionId must be a string")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[sid]
	if !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown session %q", clip(sid))
	}
	return s, nil
}

func (a *agent) newSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Cwd json.RawMessage `json:"cwd"`
	}
	if err := object(params, &p); err != nil {
		return nil, err
	}
	var cwd string
	if len(p.Cwd) > 0 && json.Unmarshal(p.Cwd, &cwd) != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "cwd must be a string")
	}
	models, err := a.cfg.Generator.Models(ctx)
	if err != nil {
		a.log.Warn("listing models failed; the session keeps the configured or fallback model", "err", err)
	}
	model := pickModel(a.cfg.Model, models)
	if !slices.Contains(models, model) {
		models = append(models, model)
	}
	s := newSession(randomID(), cwd, model, models)
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	a.log.Info("acp session/new", "session", s.id, "model", model, "cwd", cwd)
	return newSessionResult{SessionID: s.id, ConfigOptions: s.configOptions()}, nil
}

// pickModel is PRISM_ACP_MODEL when set, else a CUDA model, else the first
// one, else DefaultFallbackModel.
func pickModel(configured string, models []string) string {
	if configured != "" {
		return configured
	}
	for _, m := range models {
		if strings.Contains(strings.ToLower(m), "cuda") {
			return m
		}
	}
	if len(models) > 0 {
		return models[0]
	}
	return DefaultFallbackModel
}

func (a *agent) setConfig(params json.RawMessage) (any, error) {
	var p struct {
		SessionID json.RawMessage `json:"sessionId"`
		ConfigID  json.RawMessage `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := object(params, &p); err != nil {
		return nil, err
	}
	s, err := a.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	var id, value string
	if json.Unmarshal(p.ConfigID, &id) != nil || id != ConfigModel {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "configId: the only option is %q", ConfigModel)
	}
	if json.Unmarshal(p.Value, &value) != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "value must be a model id")
	}
	if err := s.setModel(value); err != nil {
		return nil, err
	}
	return setConfigResult{ConfigOptions: s.configOptions()}, nil
}

// cancel ends the prompt in flight of a session; unknown or idle sessions
// are ignored. Frames are handled in arrival order, so a cancel reaches the
// prompt that was in flight when it was read, never one started after it.
func (a *agent) cancel(params json.RawMessage) {
	var p struct {
		SessionID json.RawMessage `json:"sessionId"`
	}
	if object(params, &p) != nil {
		return
	}
	s, err := a.session(p.SessionID)
	if err != nil {
		return
	}
	a.log.Debug("acp session/cancel", "session", s.id)
	s.cancelPrompt()
}

func clip(s string) string {
	if len(s) > 100 {
		return strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}

func (a *agent) update(sessionID string, u any) {
	_ = a.conn.Notify("session/update", notification{SessionID: sessionID, Update: u})
}

func (a *agent) nextRoot(s *session, id json.RawMessage) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roots++
	return fmt.Sprintf("%s/prompt/%d/%s", s.id, a.roots, clip(string(id)))
}
