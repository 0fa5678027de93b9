//go:build cgo

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/prism-local/prism/engine"
)

// TestLoad is the bounded loopback load test: 200 clients at once on a
// scripted ONNX model, half of them streaming, a quarter leaving at a
// random point (before the answer, while queued, mid-stream). Every client
// that stays gets a complete answer or a clean 503 server_busy with
// Retry-After; afterwards the lock is free, the queue empty (as /health
// says), a request is served and no goroutine of the test outlives it.
func TestLoad(t *testing.T) {
	const clients = 200
	dir := qaModels.Path(t)
	// Registered before the server's own cleanups, so it runs after them:
	// once the server and the Manager are closed, nothing of theirs is left.
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
	{
		qs := startOn(t, dir, []engine.ManagerOption{engine.WithMaxQueue(24), engine.WithQueueTimeout(time.Second)}, nil, nil)
		qs.serves(t, "hello") // load the model before the storm
		outcomes := make([]outcome, clients)
		var wg sync.WaitGroup
		for i := range clients {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			c := loadClient{stream: i%2 == 0, leave: i%4 == 3, r: r}
			wg.Go(func() { outcomes[i] = c.run(qs) })
		}
		wg.Wait()
		counts := map[string]int{}
		for i, o := range outcomes {
			counts[o.kind]++
			if o.err != nil {
				t.Errorf("client %d: %v", i, o.err)
			}
		}
		t.Logf("outcomes %v, manager %+v", counts, qs.mgr.Stats())
		if counts["complete"] == 0 || counts["busy"] == 0 {
			t.Errorf("the load did not exercise both answers: %v", counts)
		}
		qs.settled(t)
		var h struct {
			Busy       bool `json:"busy"`
			QueueDepth int  `json:"queue_depth"`
			Model      string
		}
		getJSON(t, qs, "/health", &h)
		if h.Busy || h.QueueDepth != 0 {
			t.Errorf("health after the load: %+v", h)
		}
		qs.serves(t, "hello")
	}
}

type loadClient struct {
	stream, leave bool
	r             *rand.Rand
}

type outcome struct {
	kind string // complete, busy, left
	err  error
}

// run sends one request and judges what came back.
func (c loadClient) run(qs *qaServer) outcome {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaveAfterChunks := -1
	if c.leave {
		if c.stream && c.r.IntN(2) == 0 {
			leaveAfterChunks = 1 + c.r.IntN(6) // mid-stream
		} else {
			// At a random time: before sending, while queued or while generating.
			timer := time.AfterFunc(time.Duration(c.r.IntN(300))*time.Millisecond, cancel)
			defer timer.Stop()
		}
	}
	body := fmt.Sprintf(`{"model":"hello","messages":[{"role":"user","content":"hi %d"}],"max_tokens":8,"stream":%v}`, c.r.IntN(1000), c.stream)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, qs.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := qs.http.Do(req)
	if err != nil {
		if c.leave && errors.Is(err, context.Canceled) {
			return outcome{kind: "left"}
		}
		return outcome{err: err}
	}
	defer resp.Body.Close()
	o := c.judge(resp, leaveAfterChunks, cancel)
	if o.err != nil && c.leave && ctx.Err() != nil {
		return outcome{kind: "left"} // cut by its own leaving
	}
	return o
}

func (c loadClient) judge(resp *http.Response, leaveAfterChunks int, cancel func()) outcome {
	switch resp.StatusCode {
	case http.StatusServiceUnavailable:
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return outcome{err: fmt.Errorf("503 body: %w", err)}
		}
		if code, _ := errorOf(body); code != "server_busy" || resp.Header.Get("Retry-After") != "30" {
			return outcome{err: fmt.Errorf("503 not a clean server_busy: Retry-After %q %v", resp.Header.Get("Retry-After"), body)}
		}
		return outcome{kind: "busy"}
	case http.StatusOK:
	default:
		b, _ := io.ReadAll(resp.Body)
		return outcome{err: fmt.Errorf("status %d: %s", resp.StatusCode, b)}
	}
	if !c.stream {
		var body struct {
			Choices []struct {
				Message struct {
					ReasoningContent string `json:"reasoning_content"`
				}
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return outcome{err: err}
		}
		if len(body.Choices) != 1 || body.Choices[0].FinishReason != "length" || !strings.HasPrefix("\nThe user greets me.\n", body.Choices[0].Message.ReasoningContent) {
			return outcome{err: fmt.Errorf("incomplete answer %+v", body)}
		}
		return outcome{kind: "complete"}
	}
	sc := bufio.NewScanner(resp.Body)
	chunks, finish := 0, ""
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			if finish != "length" {
				return outcome{err: fmt.Errorf("[DONE] after finish %q", finish)}
			}
			return outcome{kind: "complete"}
		}
		var chunk struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
			Error any
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil || chunk.Error != nil {
			return outcome{err: fmt.Errorf("chunk %s (%v)", data, err)}
		}
		if len(chunk.Choices) > 0 {
			finish += chunk.Choices[0].FinishReason
		}
		if chunks++; chunks == leaveAfterChunks {
			cancel()
			return outcome{kind: "left"}
		}
	}
	return outcome{err: fmt.Errorf("stream ended without [DONE] after %d chunks: %v", chunks, sc.Err())}
}
