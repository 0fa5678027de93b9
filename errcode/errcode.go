package errcode

import "errors"

// Codes of model loading, requests and generation (packages engine,
// engine/onnx, engine/tokenizer, lock, resources, templates, tools and the
// internal packages the servers are built from).
const (
	// ModelLoadFailed: a model could not be loaded (spec: HTTP 500).
	ModelLoadFailed = "model_load_failed"
	// ContextLengthExceeded: the prompt leaves no room in the context
	// window (HTTP 400).
	ContextLengthExceeded = "context_length_exceeded"
	// InvalidRequest: a request field has an invalid value (HTTP 400).
	InvalidRequest = "invalid_request_error"
	// ServerBusy: the queue is full or the wait timed out (HTTP 503 with
	// Retry-After).
	ServerBusy = "server_busy"
	// ClientDisconnected: the caller went away while waiting; no response
	// is written.
	ClientDisconnected = "client_disconnected"
	// EngineClosed: an Engine or Manager was used after Close.
	EngineClosed = "engine_closed"
	// LoadLockTimeout: another process held the model-load lock for longer
	// than the wait allowed.
	LoadLockTimeout = "load_lock_timeout"
	// InsufficientResources: the RAM/VRAM budget refused a load (HTTP 503
	// with Retry-After).
	InsufficientResources = "insufficient_resources"
	// TemplateRenderFailed: a chat template failed where no fallback is
	// allowed, such as a request with tools (HTTP 400).
	TemplateRenderFailed = "template_render_failed"
	// ToolChoiceUnsatisfied: the answer did not make the tool call
	// tool_choice demanded.
	ToolChoiceUnsatisfied = "tool_choice_unsatisfied"
	// UnknownParameter: a request parameter OpenAI does not define either
	// (HTTP 400).
	UnknownParameter = "unknown_parameter"
	// UnsupportedParameter: a parameter whose value Prism cannot honour
	// (HTTP 400).
	UnsupportedParameter = "unsupported_parameter"
	// RequestTooLarge: a request body over the size limit (HTTP 413).
	RequestTooLarge = "request_too_large"
	// AmbiguousModel: a model name matches several models (HTTP 400).
	AmbiguousModel = "ambiguous_model"
	// ModelNotFound: a model name matches none (HTTP 404).
	ModelNotFound = "model_not_found"
	// InferenceFailed: a runtime step of a loaded model failed (HTTP
	// 500); the model stays loaded and usable.
	InferenceFailed = "inference_failed"
	// InvalidSetting: a PRISM_* setting or a line of the settings file is
	// malformed. It is reported when a program starts (or by prism.Open
	// given WithEnv); it is not a request's fault.
	InvalidSetting = "invalid_setting"
)

// Codes of the signals package and its stores.
const (
	// InvalidArgument: a malformed argument.
	InvalidArgument = "invalid_argument"
	// NotFound: the session, signal or execution named does not exist.
	NotFound = "not_found"
	// NotBootstrapped: a verb that needs a session before there is one.
	NotBootstrapped = "not_bootstrapped"
	// SessionEnded: a verb on a session that has been wrapped.
	SessionEnded = "session_ended"
	// IdentityMismatch: the session belongs to another identity.
	IdentityMismatch = "identity_mismatch"
	// UnknownVerb: a verb the router does not know.
	UnknownVerb = "unknown_verb"
	// AlreadyExists: a session or execution id that is already registered.
	AlreadyExists = "already_exists"
	// NotExecutor: an outcome recorded by someone other than the node's
	// executor.
	NotExecutor = "not_executor"
	// OutcomeConflict: a second, different outcome for one node.
	OutcomeConflict = "outcome_conflict"
	// NotTerminal: an execution that is still running where a finished one
	// is needed.
	NotTerminal = "not_terminal"
	// TurnFailed: the waited-for tree completed and its root failed.
	TurnFailed = "turn_failed"
	// StoreClosed: a store used after Close.
	StoreClosed = "store_closed"
	// StoreFailed: the database failed.
	StoreFailed = "store_failed"
)

// Codes of the spec that the servers return (examples/serve and the other
// mains); engine/ollama returns the first two as well. They are defined
// here so that the servers do not define them again.
const (
	// BackendUnavailable: Ollama is unreachable or failing (HTTP 502).
	BackendUnavailable = "backend_unavailable"
	// ToolsNotSupported: a request with tools for a model whose template
	// has no place for them, or that Ollama refuses tools for (HTTP 400).
	ToolsNotSupported = "tools_not_supported"
	// InvalidAPIKey: the bearer token does not match (HTTP 401).
	InvalidAPIKey = "invalid_api_key"
)

// Codes of pulling a model from the Hugging Face hub (internal/hub through
// prism.Pull and the mains).
const (
	// HubAccessDenied: the hub refused the repository (401/403): gated or
	// private, and no token or one without access.
	HubAccessDenied = "hub_access_denied"
	// HubUnavailable: the hub is unreachable, kept failing after the
	// retries, or HF_HUB_OFFLINE is set and the model is not in the cache.
	HubUnavailable = "hub_unavailable"
	// DownloadCorrupt: a downloaded file's digest differs from the one the
	// hub gave; the file was removed.
	DownloadCorrupt = "download_corrupt"
)

// Coder is implemented by every typed error in Prism.
type Coder interface {
	error
	// Code returns one of this package's constants.
	Code() string
}

// Parameter is implemented by the typed errors that blame one request
// parameter.
type Parameter interface {
	error
	// ParamName returns the parameter, as the OpenAI API spells its path
	// ("top_p", "messages", "tools[0].function.parameters"), or "".
	ParamName() string
}

// Param returns the parameter the first error in err's tree that names one
// blames, or "" when none does.
func Param(err error) string {
	var p Parameter
	if errors.As(err, &p) {
		return p.ParamName()
	}
	return ""
}

// Of returns the code of the first error in err's tree that carries one —
// depth first, through %w, errors.Join and Unwrap methods, as errors.As
// walks it — or "" when none does (a nil err, a context error, an error
// from outside Prism).
func Of(err error) string {
	var c Coder
	if errors.As(err, &c) {
		return c.Code()
	}
	return ""
}
