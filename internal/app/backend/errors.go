package backend

// Error is a failure of the backend itself, with its errcode code.
type Error struct {
	ErrCode string
	Msg     string
}

func (e *Error) Error() string { return "backend: " + e.Msg }

// Code returns the error's code.
func (e *Error) Code() string { return e.ErrCode }

func newError(code, msg string) *Error { return &Error{ErrCode: code, Msg: msg} }
