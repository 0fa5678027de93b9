//go:build cgo

package onnx

import (
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
)

// The two KV cache strategies. Both keep their buffers outside the Go heap,
// sized by Reserve to the positions a request needs (prompt + max_tokens),
// never to the model's whole context window, and grow on demand.
//
// sharedCache (genai GroupQueryAttention models with
// past_present_share_buffer): one [1, kv_heads, capacity, head_dim] buffer
// per layer and key/value is bound as both the past input and the present
// output. The attention op writes the new positions in place; the step
// copies nothing and creates nothing. The attention mask is [1, capacity]
// with ones over the valid positions, as onnxruntime-genai feeds it.
//
// handoverCache (optimum exports and genai models without a shared
// buffer): the graph concatenates past and new positions into present
// outputs of shape [1, kv_heads, past+n, head_dim]. Two buffers per layer and
// key/value alternate: the step's present outputs are pre-sized views of
// one buffer, the runtime writes them in place, and the next step takes the
// same tensors as its past inputs (no copy on our side; the only copy is the
// graph's own Concat). Truncating for prefix reuse compacts the surviving
// positions in place.
type kvCache interface {
	// reserve makes room for n positions, keeping the first cached.
	reserve(n, cached int) error
	// truncate drops positions at and above to; cached is the current length.
	truncate(to, cached int) error
	// prepare sets up the tensors for a step of n positions at pos.
	prepare(pos, n int) error
	// commit records a successful step; abort undoes prepare.
	commit()
	abort()
	// past and present return the tensor for slot i (layer*2 + 0 key, 1 value).
	past(i int) ort.Value
	present(i int) ort.Value
	capacity() int
	close()
}

type cacheShape struct {
	slots   int // layers * 2
	kvHeads int
	headDim int
	dt      ort.TensorElementDataType
}

func (s cacheShape) rowBytes() int { return s.headDim * elemSize(s.dt) }

type sharedCache struct {
	cacheShape
	capTok int
	bufs   [][]byte
	ts     []*ort.CustomDataTensor
}

func newSharedCache(s cacheShape) *sharedCache {
	return &sharedCache{cacheShape: s, bufs: make([][]byte, s.slots), ts: make([]*ort.CustomDataTensor, s.slots)}
}

func (c *sharedCache) capacity() int { return c.capTok }

func (c *sharedCache) reserve(n, cached int) error {
	if n <= c.capTok {
		return nil
	}
	row := c.rowBytes()
	bufs := make([][]byte, c.slots)
	ts := make([]*ort.CustomDataTensor, c.slots)
	fail := func(err error) error {
		for i := range bufs {
			destroy(ts[i])
			freeBuffer(bufs[i])
		}
		return err
	}
	for i := range bufs {
		b, err := allocBuffer(c.kvHeads * n * row)
		if err != nil {
			return fail(fmt.Errorf("allocate KV cache for %d positions: %w", n, err))
		}
		bufs[i] = b
		// Keep the cached positions: head h moves from stride capTok to n.
		if cached > 0 {
			for h := range c.kvHeads {
				copy(b[h*n*row:h*n*row+cached*row], c.bufs[i][h*c.capTok*row:h*c.capTok*row+cached*row])
			}
		}
		t, err := newTensor(b, c.dt, 1, int64(c.kvHeads), int64(n), int64(c.headDim))
		if err != nil {
			return fail(err)
		}
		ts[i] = t
	}
	c.close()
	c.bufs, c.ts, c.capTok = bufs, ts, n
	return nil
}

func (c *sharedCache) truncate(int, int) error { return nil } // the mask marks what is valid
func (c *sharedCache) prepare(int, int) error  { return nil }
func (c *sharedCache) commit()                 {}
func (c *sharedCache) abort()                  {}
func (c *sharedCache) past(i int) ort.Value    { return c.ts[i] }
func (c *sharedCache) present(i int) ort.Value { return c.ts[i] }

func (c *sharedCache) close() {
	for i := range c.bufs {
		destroy(c.ts[i])
		freeBuffer(c.bufs[i])
		c.ts[i], c.bufs[i] = nil, nil
	}
	c.capTok = 0
}

type handoverCache struct {
	cacheShape
	capTok int
	bufs   [][2][]byte
	cur    int // which of the two buffers holds the past
	length int
	next   int                     // length after the prepared step
	pasts  []*ort.CustomDataTensor // views of bufs[i][cur], length positions
	nexts  []*ort.CustomDataTensor // views of bufs[i][1-cur] being written
	// dims is the shape handed to each new view. The binding passes a
	// shape's memory to C, which moves any shape slice made per call to the
	// heap; one kept here costs nothing per step.
	dims [4]int64
}

func newHandoverCache(s cacheShape) *handoverCache {
	return &handoverCache{cacheShape: s, bufs: make([][2][]byte, s.slots),
		pasts: make([]*ort.CustomDataTensor, s.slots), nexts: make([]*ort.CustomDataTensor, s.slots)}
}

func (c *handoverCache) capacity() int { return c.capTok }

func (c *handoverCache) view(buf []byte, length int) (*ort.CustomDataTensor, error) {
	c.dims = [4]int64{1, int64(c.kvHeads), int64(length), int64(c.headDim)}
	return newTensor(buf, c.dt, c.dims[:]...)
}

func (c *handoverCache) reserve(n, cached int) error {
	if n <= c.capTok {
		return nil
	}
	size := c.kvHeads * n * c.rowBytes()
	bufs := make([][2][]byte, c.slots)
	pasts := make([]*ort.CustomDataTensor, c.slots)
	fail := func(err error) error {
		for i := range bufs {
			destroy(pasts[i])
			freeBuffer(bufs[i][0])
			freeBuffer(bufs[i][1])
		}
		return err
	}
	used := c.kvHeads * cached * c.rowBytes() // past is contiguous [kv_heads, cached, head_dim]
	for i := range bufs {
		for k := range 2 {
			b, err := allocBuffer(size)
			if err != nil {
				return fail(fmt.Errorf("allocate KV cache for %d positions: %w", n, err))
			}
			bufs[i][k] = b
		}
		if cached > 0 {
			copy(bufs[i][0][:used], c.bufs[i][c.cur][:used])
		}
		t, err := c.view(bufs[i][0], cached)
		if err != nil {
			return fail(err)
		}
		pasts[i] = t
	}
	c.close()
	c.bufs, c.pasts, c.cur, c.capTok, c.length = bufs, pasts, 0, n, cached
	return nil
}

func (c *handoverCache) truncate(to, cached int) error {
	if to >= c.length {
		return nil
	}
	row := c.rowBytes()
	for i := range c.bufs {
		b := c.bufs[i][c.cur]
		// Compact head by head; destinations never pass their sources.
		for h := 1; h < c.kvHeads; h++ {
			copy(b[h*to*row:(h*to+to)*row], b[h*c.length*row:(h*c.length+to)*row])
		}
		t, err := c.view(b, to)
		if err != nil {
			return err
		}
		destroy(c.pasts[i])
		c.pasts[i] = t
	}
	c.length = to
	return nil
}

func (c *handoverCache) prepare(pos, n int) error {
	for i := range c.bufs {
		t, err := c.view(c.bufs[i][1-c.cur], pos+n)
		if err != nil {
			c.abort()
			return err
		}
		c.nexts[i] = t
	}
	c.next = pos + n
	return nil
}

func (c *handoverCache) commit() {
	for i := range c.pasts {
		destroy(c.pasts[i])
		c.pasts[i], c.nexts[i] = c.nexts[i], nil
	}
	c.cur = 1 - c.cur
	c.length = c.next
}

func (c *handoverCache) abort() {
	for i := range c.nexts {
		destroy(c.nexts[i])
		c.nexts[i] = nil
	}
}

func (c *handoverCache) past(i int) ort.Value    { return c.pasts[i] }
func (c *handoverCache) present(i int) ort.Value { return c.nexts[i] }

func (c *handoverCache) close() {
	c.abort()
	for i := range c.bufs {
		destroy(c.pasts[i])
		c.pasts[i] = nil
		freeBuffer(c.bufs[i][0])
		freeBuffer(c.bufs[i][1])
		c.bufs[i] = [2][]byte{}
	}
	c.capTok, c.length = 0, 0
}
