package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
)

const fakeChat = `{"model":"fake","messages":[{"role":"user","content":"hi"}]`

// TestDisconnectWhileQueued is P9: a client that leaves while it waits for
// the engine leaves the queue at once (not at the queue timeout), nothing is
// written to it, and the lock goes to the next caller.
func TestDisconnectWhileQueued(t *testing.T) {
	fs := newFake(t, "Hello.", nil, engine.WithQueueTimeout(5*time.Minute))
	srv := fs.listen(t)
	lease, err := fs.mgr.Use(t.Context(), fs.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		body := fakeChat + `,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		done := make(chan error, 1)
		go func() {
			resp, err := srv.Client().Do(req)
			if err == nil {
				resp.Body.Close()
				err = errors.New("answered while the lock was held: " + resp.Status)
			}
			done <- err
		}()
		before := fs.mgr.Stats().Disconnected
		waitFor(t, func() bool { return fs.mgr.Stats().Waiting == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("stream %v: %v", stream, err)
		}
		// Left at once: long before the 5-minute queue timeout.
		waitFor(t, func() bool { st := fs.mgr.Stats(); return st.Waiting == 0 && st.Disconnected == before+1 })
	}
	lease.Release()
	settledFake(t, fs.mgr)
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(fakeChat+`}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("next request: %d", resp.StatusCode)
	}
	if st := fs.mgr.Stats(); st.TimedOut != 0 || st.Rejected != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestDisconnectMidStream: a client that leaves in the middle of a stream
// stops the generation within one token, and the lock is released.
func TestDisconnectMidStream(t *testing.T) {
	const reply, blockAt = 2000, 40
	var forwards, afterLeaving atomic.Int32
	var clientLeft atomic.Bool
	fs := newFake(t, letters(reply), func(ctx context.Context, ids []int32, pos int) error {
		if ctx.Err() != nil {
			afterLeaving.Add(1) // a step begun after the server saw the client leave
		}
		if forwards.Add(1) == blockAt {
			// Hold this step until the request's context ends, as a slow
			// model would, so the client surely leaves mid-generation.
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Errorf("the request's context did not end in 10 s (client left: %v)", clientLeft.Load())
				return errors.New("the request's context did not end after the client left")
			}
		}
		return nil
	})
	srv := fs.listen(t)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(fakeChat+`,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"content":"`+letters(reply)[:1]) {
	}
	clientLeft.Store(true)
	cancel()
	resp.Body.Close()
	settledFake(t, fs.mgr) // the handler ended and released the lock
	// Leaving is no error: one INFO line naming the answer.
	waitFor(t, func() bool {
		return strings.Contains(fs.logs.String(), `level=INFO msg="client left mid-stream" id=chatcmpl-`)
	})
	if strings.Contains(fs.logs.String(), "level=ERROR") {
		t.Errorf("a client leaving logged an error:\n%s", fs.logs.String())
	}
	if n := afterLeaving.Load(); n > 1 {
		t.Errorf("%d forward steps after the client left; want at most 1", n)
	}
	if n := forwards.Load(); n > blockAt+1 {
		t.Errorf("%d forward steps: the generation went on after the client left", n)
	}
	r, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(fakeChat+`,"max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		b, _ := io.ReadAll(r.Body)
		t.Errorf("next request: %d %s", r.StatusCode, b)
	}
}
