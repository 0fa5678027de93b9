package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Idle is the sliding window of PRISM_MCP_AUTO_STOP_SEC (P10): Done is
// closed once no tools/call has run for the window. A call in flight holds
// the window open, and its end restarts it, so the call still gets its
// answer.
type Idle struct {
	window time.Duration

	mu     sync.Mutex
	active int
	timer  *time.Timer
	done   chan struct{}
	fired  bool
}

// NewIdle starts a window of d; d must be positive.
func NewIdle(d time.Duration) *Idle {
	i := &Idle{window: d, done: make(chan struct{})}
	i.timer = time.AfterFunc(d, i.expire)
	return i
}

// Done is closed when the window passes without a tool call.
func (i *Idle) Done() <-chan struct{} { return i.done }

// Window returns the window's length.
func (i *Idle) Window() time.Duration { return i.window }

// Stop stops the timer.
func (i *Idle) Stop() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.timer.Stop()
}

func (i *Idle) expire() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.active == 0 && !i.fired {
		i.fired = true
		close(i.done)
	}
}

func (i *Idle) begin() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.fired {
		return false
	}
	i.active++
	i.timer.Stop()
	return true
}

func (i *Idle) end() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.active--
	if i.active == 0 && !i.fired {
		i.timer.Reset(i.window)
	}
}

func (i *Idle) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" || !i.begin() {
			return next(ctx, method, req)
		}
		defer i.end()
		return next(ctx, method, req)
	}
}
