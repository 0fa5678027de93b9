//go:build cgo

package onnx

import (
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
)

// stateCache holds the fixed-size states of a hybrid decoder's
// non-attention layers (LFM2's convolution layers: past_conv.N in,
// present_conv.N out). A step reads every state and writes its successor
// whole, so each state has two buffers that swap on commit. Unlike a KV
// cache a state cannot be cut back to an earlier position: it is restored
// from a snapshot, taken at the end of every multi-token step (a prompt's
// or a prefill chunk's end), and the positions after the snapshot are run
// again (see Backend.rewind).
type stateCache struct {
	specs []stateSpec
	bufs  [][2][]byte
	ts    [][2]*ort.CustomDataTensor
	cur   int // which buffer of each state holds the state of the cached positions
	snaps []stateSnapshot
}

// stateSpec is one state's shape and element type.
type stateSpec struct {
	dims []int64
	dt   ort.TensorElementDataType
}

func (s stateSpec) bytes() int {
	n := elemSize(s.dt)
	for _, d := range s.dims {
		n *= int(d)
	}
	return n
}

// stateSnapshot is every state as it stood after pos positions.
type stateSnapshot struct {
	pos  int
	data [][]byte
}

// maxSnapshots bounds the snapshots kept: the newest are the ones a
// conversation resumes from.
const maxSnapshots = 8

func newStateCache(specs []stateSpec) (*stateCache, error) {
	c := &stateCache{specs: specs, bufs: make([][2][]byte, len(specs)), ts: make([][2]*ort.CustomDataTensor, len(specs))}
	for i, s := range specs {
		for k := range 2 {
			b, err := allocBuffer(s.bytes())
			if err != nil {
				c.close()
				return nil, fmt.Errorf("allocate state %d: %w", i, err)
			}
			c.bufs[i][k] = b
			t, err := newTensor(b, s.dt, s.dims...)
			if err != nil {
				c.close()
				return nil, err
			}
			c.ts[i][k] = t
		}
	}
	return c, nil
}

func (c *stateCache) past(i int) ort.Value    { return c.ts[i][c.cur] }
func (c *stateCache) present(i int) ort.Value { return c.ts[i][1-c.cur] }

// commit makes the step's written states current; a step that failed
// leaves the current ones as they were.
func (c *stateCache) commit() { c.cur = 1 - c.cur }

// snapshot records the current states as those after pos positions,
// replacing any snapshot at or after pos.
func (c *stateCache) snapshot(pos int) {
	c.drop(pos)
	if len(c.snaps) == maxSnapshots {
		c.snaps = c.snaps[1:]
	}
	s := stateSnapshot{pos: pos, data: make([][]byte, len(c.bufs))}
	for i := range c.bufs {
		s.data[i] = append([]byte(nil), c.bufs[i][c.cur]...)
	}
	c.snaps = append(c.snaps, s)
}

// drop forgets the snapshots at or after pos.
func (c *stateCache) drop(pos int) {
	n := len(c.snaps)
	for n > 0 && c.snaps[n-1].pos >= pos {
		n--
	}
	c.snaps = c.snaps[:n]
}

// restore sets the states to the newest snapshot at or before pos (the
// zero state at 0 when there is none) and returns its position.
func (c *stateCache) restore(pos int) int {
	for k := len(c.snaps) - 1; k >= 0; k-- {
		if s := c.snaps[k]; s.pos <= pos {
			for i := range c.bufs {
				copy(c.bufs[i][c.cur], s.data[i])
			}
			c.snaps = c.snaps[:k+1]
			return s.pos
		}
	}
	c.reset()
	return 0
}

// reset sets every state to zero (no position cached) and forgets the
// snapshots.
func (c *stateCache) reset() {
	for i := range c.bufs {
		clear(c.bufs[i][c.cur])
	}
	c.snaps = nil
}

func (c *stateCache) close() {
	if c == nil {
		return
	}
	for i := range c.bufs {
		for k := range 2 {
			destroy(c.ts[i][k])
			freeBuffer(c.bufs[i][k])
		}
	}
	c.bufs, c.ts, c.snaps = nil, nil, nil
}
