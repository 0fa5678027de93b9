//go:build cgo

package onnx

import (
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
)

// The three KV cache strategies. All keep their buffers outside the Go heap,
// sized by Reserve to the positions a request needs (prompt + max_tokens),
// never to the model's whole context window, and grow on demand.
//
// sharedCache (genai GroupQueryAttention models with
// past_present_share_buffer): one [1, kv_heads, capacity, head_dim] buffer
// per layer and key/value is bound as both the past input and the present
// output. The attention op writes the new positions in place; the step
// copies nothing and creates nothing. The attention mask is [1, pos+n] of
// ones, whose width and row sum give the op the total and valid lengths. A
// graph that fixes its past's length (a static buffer) gets a buffer of
// exactly that length.
//
// paddedCache (optimum exports with position_ids): the hand-over below with
// the past kept at a padded length, so that a decode step reuses its
// tensors; see its own comment.
//
// handoverCache (other graphs without a shared buffer): the graph concatenates past and new positions into present
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
	slots   int // layers * 2, or layers with combined
	kvHeads int // 2 * the graph's with combined
	// combined views a slot as [2, 1, kv_heads/2, n, head_dim] (the
	// exact hand-over only).
	combined bool
	headDim  int
	dt       ort.TensorElementDataType
}

func (s cacheShape) rowBytes() int { return s.headDim * elemSize(s.dt) }

type sharedCache struct {
	cacheShape
	// fixed is the buffer length the graph declares for its past, 0 when
	// it leaves it free: such a graph takes a buffer of exactly that
	// length, made once.
	fixed  int
	capTok int
	bufs   [][]byte
	ts     []*ort.CustomDataTensor
}

func newSharedCache(s cacheShape, fixed int) *sharedCache {
	return &sharedCache{cacheShape: s, fixed: fixed, bufs: make([][]byte, s.slots), ts: make([]*ort.CustomDataTensor, s.slots)}
}

func (c *sharedCache) capacity() int { return c.capTok }

func (c *sharedCache) reserve(n, cached int) error {
	if c.fixed > 0 {
		if n > c.fixed {
			return fmt.Errorf("reserve %d positions: the graph fixes its KV buffer at %d", n, c.fixed)
		}
		n = c.fixed
	}
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
	dims [5]int64
}

func newHandoverCache(s cacheShape) *handoverCache {
	return &handoverCache{cacheShape: s, bufs: make([][2][]byte, s.slots),
		pasts: make([]*ort.CustomDataTensor, s.slots), nexts: make([]*ort.CustomDataTensor, s.slots)}
}

func (c *handoverCache) capacity() int { return c.capTok }

func (c *handoverCache) view(buf []byte, length int) (*ort.CustomDataTensor, error) {
	if c.combined {
		c.dims = [5]int64{2, 1, int64(c.kvHeads / 2), int64(length), int64(c.headDim)}
		return newTensor(buf, c.dt, c.dims[:]...)
	}
	c.dims = [5]int64{1, int64(c.kvHeads), int64(length), int64(c.headDim)}
	return newTensor(buf, c.dt, c.dims[:4]...)
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

// padBlock is how many positions a padded past grows by at a time.
const padBlock = 64

func padTo(n int) int { return (n + padBlock - 1) / padBlock * padBlock }

// paddedCache is the present→past hand-over with a padded past, used when
// the graph takes position_ids and an attention_mask. The past input is a
// view of buffer A of length P (the valid length rounded up to padBlock),
// the present output a view of buffer B of length P+n. Positions [valid, P)
// of the past are padding, zero in the attention mask; position_ids carry
// the true positions. After a step the n new rows of each head are copied
// from B (at P) into A (at valid). Inside a block the shapes do not change,
// so a decode step reuses the same tensors and binds nothing new; crossing
// a block re-lays A's heads at the new stride, once per padBlock positions.
type paddedCache struct {
	cacheShape
	capTok int
	capPad int         // capTok rounded up to padBlock: A's rows per head
	bufs   [][2][]byte // per slot: A (past), B (present)
	length int         // valid positions in A
	stride int         // P: A's rows per head, padTo(length)

	maskDT  ort.TensorElementDataType
	maskBuf []byte
	// what maskBuf holds: ones [0, mValid), zeros [mValid, mP), ones after;
	// mP < 0 when it must be rewritten.
	mValid, mP int

	dec  []*padViews // views for one-token steps, by P / padBlock
	tmp  *padViews   // views of a multi-token step, destroyed after it
	cur  *padViews   // the prepared step's views
	n    int         // the prepared step's length
	dims [4]int64
}

// padViews are the tensors of a step with past length P and n new positions.
type padViews struct {
	past, present []*ort.CustomDataTensor
	mask          *ort.CustomDataTensor
}

func (v *padViews) close() {
	if v == nil {
		return
	}
	for i := range v.past {
		destroy(v.past[i])
		destroy(v.present[i])
	}
	destroy(v.mask)
}

func newPaddedCache(s cacheShape, maskDT ort.TensorElementDataType) *paddedCache {
	return &paddedCache{cacheShape: s, maskDT: maskDT, bufs: make([][2][]byte, s.slots), mP: -1}
}

func (c *paddedCache) capacity() int { return c.capTok }

func (c *paddedCache) mask() ort.Value { return c.cur.mask }

func (c *paddedCache) reserve(n, cached int) error {
	if n <= c.capTok {
		return nil
	}
	row := c.rowBytes()
	capPad := padTo(n)
	bufs := make([][2][]byte, c.slots)
	fail := func(err error) error {
		for i := range bufs {
			freeBuffer(bufs[i][0])
			freeBuffer(bufs[i][1])
		}
		return err
	}
	stride := padTo(cached)
	for i := range bufs {
		for k, rows := range [2]int{capPad, capPad + padBlock} {
			b, err := allocBuffer(c.kvHeads * rows * row)
			if err != nil {
				return fail(fmt.Errorf("allocate KV cache for %d positions: %w", n, err))
			}
			bufs[i][k] = b
		}
		// Keep the cached positions: head h moves from stride c.stride to
		// stride; the new buffer's padding is already zero.
		for h := range c.kvHeads {
			copy(bufs[i][0][h*stride*row:(h*stride+cached)*row], c.bufs[i][0][h*c.stride*row:(h*c.stride+cached)*row])
		}
	}
	c.close()
	c.bufs, c.capTok, c.capPad, c.length, c.stride = bufs, n, capPad, cached, stride
	c.maskBuf = make([]byte, (capPad+padBlock)*elemSize(c.maskDT))
	c.mP = -1
	c.dec = make([]*padViews, capPad/padBlock+1)
	return nil
}

// relay moves A's heads from stride c.stride to to, keeping the first keep
// rows of each, and zeroes rows [keep, to) of every head.
func (c *paddedCache) relay(keep, to int) {
	row := c.rowBytes()
	from := c.stride
	for i := range c.bufs {
		a := c.bufs[i][0]
		if to > from { // last head first: destinations never overwrite unread sources
			for h := c.kvHeads - 1; h > 0; h-- {
				copy(a[h*to*row:(h*to+keep)*row], a[h*from*row:(h*from+keep)*row])
			}
		} else if to < from {
			for h := 1; h < c.kvHeads; h++ {
				copy(a[h*to*row:(h*to+keep)*row], a[h*from*row:(h*from+keep)*row])
			}
		}
		for h := range c.kvHeads {
			clear(a[(h*to+keep)*row : (h+1)*to*row])
		}
	}
	c.stride = to
}

func (c *paddedCache) truncate(to, _ int) error {
	if to >= c.length {
		return nil
	}
	c.relay(to, padTo(to))
	c.length = to
	c.mP = -1
	return nil
}

func (c *paddedCache) view(buf []byte, dt ort.TensorElementDataType, dims ...int64) (*ort.CustomDataTensor, error) {
	copy(c.dims[:], dims)
	return newTensor(buf, dt, c.dims[:len(dims)]...)
}

func (c *paddedCache) views(p, n int) (*padViews, error) {
	v := &padViews{past: make([]*ort.CustomDataTensor, c.slots), present: make([]*ort.CustomDataTensor, c.slots)}
	var err error
	kv, hd := int64(c.kvHeads), int64(c.headDim)
	for i := range c.bufs {
		if v.past[i], err = c.view(c.bufs[i][0], c.dt, 1, kv, int64(p), hd); err != nil {
			v.close()
			return nil, err
		}
		if v.present[i], err = c.view(c.bufs[i][1], c.dt, 1, kv, int64(p+n), hd); err != nil {
			v.close()
			return nil, err
		}
	}
	if v.mask, err = c.view(c.maskBuf, c.maskDT, 1, int64(p+n)); err != nil {
		v.close()
		return nil, err
	}
	return v, nil
}

func (c *paddedCache) prepare(pos, n int) error {
	if pos != c.length {
		return fmt.Errorf("step at position %d: the cache holds %d", pos, c.length)
	}
	p := c.stride
	if p+n > c.capPad+padBlock {
		return fmt.Errorf("step of %d positions at %d: the cache has room for %d", n, pos, c.capTok)
	}
	var err error
	if n == 1 {
		k := p / padBlock
		if c.dec[k] == nil {
			if c.dec[k], err = c.views(p, 1); err != nil {
				return err
			}
		}
		c.cur = c.dec[k]
	} else {
		if c.tmp, err = c.views(p, n); err != nil {
			return err
		}
		c.cur = c.tmp
	}
	c.n = n
	c.writeMask(p, n)
	return nil
}

// writeMask makes the mask ones over [0, length), zeros over [length, p)
// and ones over [p, p+n), rewriting only what changed inside a block.
func (c *paddedCache) writeMask(p, n int) {
	m := intInput{dt: c.maskDT, buf: c.maskBuf}
	from := c.mValid
	if c.mP != p || c.length < c.mValid {
		from = 0
		for i := c.length; i < p; i++ {
			m.set(i, 0)
		}
	}
	for i := from; i < c.length; i++ {
		m.set(i, 1)
	}
	for i := p; i < p+n; i++ {
		m.set(i, 1)
	}
	c.mValid, c.mP = c.length, p
}

func (c *paddedCache) commit() {
	p, n, row := c.stride, c.n, c.rowBytes()
	next := c.length + n
	if to := padTo(next); to != p {
		c.relay(c.length, to)
	}
	// Copy the new rows of each head: B holds them at p, stride p+n.
	for i := range c.bufs {
		a, b := c.bufs[i][0], c.bufs[i][1]
		for h := range c.kvHeads {
			src := (h*(p+n) + p) * row
			dst := (h*c.stride + c.length) * row
			copy(a[dst:dst+n*row], b[src:src+n*row])
		}
	}
	c.length = next
	c.abort()
}

func (c *paddedCache) abort() {
	c.tmp.close()
	c.tmp, c.cur = nil, nil
}

func (c *paddedCache) past(i int) ort.Value    { return c.cur.past[i] }
func (c *paddedCache) present(i int) ort.Value { return c.cur.present[i] }

func (c *paddedCache) close() {
	c.abort()
	for k, v := range c.dec {
		v.close()
		c.dec[k] = nil
	}
	for i := range c.bufs {
		freeBuffer(c.bufs[i][0])
		freeBuffer(c.bufs[i][1])
		c.bufs[i] = [2][]byte{}
	}
	c.capTok, c.capPad, c.length, c.stride, c.mP = 0, 0, 0, 0, -1
}
