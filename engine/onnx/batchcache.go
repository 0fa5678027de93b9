//go:build cgo

package onnx

import (
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
)

// batchCache holds the KV cache of the sequences admitted for batched
// decoding (engine.Batcher), for graphs that concatenate past and new
// positions. Every row is right-aligned in a common past length L: per
// layer and key/value the past is [B, kv_heads, L, head_dim] and the
// present [B, kv_heads, L+1, head_dim], views of two buffers that
// alternate as in the hand-over, so a decode step copies nothing on our
// side. A row shorter than L has its leading columns masked out by the
// attention mask; position_ids carry each row's own next position. A row
// that sits out a step (its slot not among the step's) still gets the
// step's column, masked out from then on: a hole.
//
// Admitting and dropping re-lay the rows into the other buffer, leaving
// out their holes, and growing copies them into new, doubled buffers:
// the only copying the batch does. Only the buffers the next step writes are ever touched by a
// failed step, so every failure leaves the rows as they were.
type batchCache struct {
	cacheShape
	maxRows int
	// rowsCap rows of lenCap positions per head fit in each buffer.
	rowsCap, lenCap int
	bufs            [][2][]byte // per cache slot: the two alternating buffers
	cur             int         // which of the two holds the past
	length          int         // L
	rows            []batchRow
	slotRow         []int // slot → row, -1 when the slot is free
}

// batchRow is one admitted sequence.
type batchRow struct {
	slot int
	next int // the row's next position: how many positions it holds
	// cols is the row's span, right-aligned in L: 1 for a column that holds
	// one of its positions, 0 for a hole.
	cols []byte
}

func newBatchCache(s cacheShape, maxRows int) *batchCache {
	c := &batchCache{cacheShape: s, maxRows: maxRows, bufs: make([][2][]byte, s.slots), slotRow: make([]int, maxRows)}
	for i := range c.slotRow {
		c.slotRow[i] = -1
	}
	return c
}

// grow makes room for a step of rows rows on a past of length positions
// (so a present of length+1), doubling what it holds. On failure nothing
// changes.
func (c *batchCache) grow(rows, length int) error {
	if rows <= c.rowsCap && length+1 <= c.lenCap {
		return nil
	}
	newRows := c.rowsCap
	if rows > c.rowsCap {
		newRows = max(rows, min(2*c.rowsCap, c.maxRows))
	}
	newLen := max(length+1, 2*c.lenCap, padBlock)
	if length+1 <= c.lenCap {
		newLen = c.lenCap
	}
	size := newRows * c.kvHeads * newLen * c.rowBytes()
	bufs := make([][2][]byte, c.slots)
	for i := range bufs {
		for k := range 2 {
			b, err := allocBuffer(size)
			if err != nil {
				for j := range bufs {
					freeBuffer(bufs[j][0])
					freeBuffer(bufs[j][1])
				}
				return fmt.Errorf("allocate the batch's KV cache for %d sequences of %d positions: %w", newRows, newLen, err)
			}
			bufs[i][k] = b
		}
	}
	// The rows keep their layout: [len(rows), kv_heads, L, head_dim] is a
	// prefix of the buffer at any capacity.
	used := len(c.rows) * c.kvHeads * c.length * c.rowBytes()
	for i := range bufs {
		if c.bufs[i][c.cur] != nil {
			copy(bufs[i][0][:used], c.bufs[i][c.cur][:used])
		}
	}
	c.free()
	c.bufs, c.cur, c.rowsCap, c.lenCap = bufs, 0, newRows, newLen
	return nil
}

// relay re-lays the rows named by order (old row indices) as rows 0, 1, …
// of the other buffer at past length to, right-aligned and without their
// holes, and makes that buffer the past. to must be at least every such
// row's position count.
func (c *batchCache) relay(order []int, to int) {
	row, from := c.rowBytes(), c.length
	for i := range c.bufs {
		src, dst := c.bufs[i][c.cur], c.bufs[i][1-c.cur]
		for nr, r := range order {
			br := c.rows[r]
			for h := range c.kvHeads {
				d := ((nr*c.kvHeads+h)*to + to - br.next) * row
				clear(dst[(nr*c.kvHeads+h)*to*row : d])
				s := ((r*c.kvHeads+h)*from + from - len(br.cols)) * row
				// Copy the runs of the row's positions, skipping holes.
				for k := 0; k < len(br.cols); {
					if br.cols[k] == 0 {
						k++
						continue
					}
					end := k
					for end < len(br.cols) && br.cols[end] == 1 {
						end++
					}
					n := (end - k) * row
					copy(dst[d:d+n], src[s+k*row:s+k*row+n])
					d += n
					k = end
				}
			}
		}
	}
	c.cur = 1 - c.cur
	rows := make([]batchRow, len(order))
	for nr, r := range order {
		rows[nr] = batchRow{slot: c.rows[r].slot, next: c.rows[r].next, cols: ones(c.rows[r].next)}
	}
	c.setRows(rows, to)
}

// ones is a row's columns without holes.
func ones(n int) []byte {
	cols := make([]byte, n)
	for k := range cols {
		cols[k] = 1
	}
	return cols
}

func (c *batchCache) setRows(rows []batchRow, length int) {
	c.rows, c.length = rows, length
	for i := range c.slotRow {
		c.slotRow[i] = -1
	}
	for r, br := range rows {
		c.slotRow[br.slot] = r
	}
}

// admit puts the n positions of src (per cache slot a buffer of
// [kv_heads, stride, head_dim]) into slot as a new row, replacing what the
// slot held. On failure nothing changes.
func (c *batchCache) admit(slot, n int, src [][]byte, stride int) error {
	var keep []int
	length, packed := n, n // L as the rows stand, and without their holes
	for r, br := range c.rows {
		if br.slot != slot {
			keep = append(keep, r)
			length, packed = max(length, len(br.cols)), max(packed, br.next)
		}
	}
	relay := len(keep) != len(c.rows) || length != c.length
	if relay {
		length = packed // a re-laid batch drops its holes
	}
	if err := c.grow(len(keep)+1, length); err != nil {
		return err
	}
	if relay {
		c.relay(keep, length)
	}
	row, r := c.rowBytes(), len(c.rows)
	for i := range c.bufs {
		dst := c.bufs[i][c.cur]
		for h := range c.kvHeads {
			d := (r*c.kvHeads + h) * length * row
			clear(dst[d : d+(length-n)*row])
			copy(dst[d+(length-n)*row:d+length*row], src[i][h*stride*row:(h*stride+n)*row])
		}
	}
	c.setRows(append(c.rows, batchRow{slot: slot, next: n, cols: ones(n)}), length)
	return nil
}

// drop removes slot's row, shrinking L to the longest row left.
func (c *batchCache) drop(slot int) {
	if slot < 0 || slot >= len(c.slotRow) || c.slotRow[slot] < 0 {
		return
	}
	var keep []int
	length := 0
	for r, br := range c.rows {
		if br.slot != slot {
			keep = append(keep, r)
			length = max(length, br.next)
		}
	}
	c.relay(keep, length)
}

// views returns the past and present tensors of a step on the current
// rows, per cache slot; the caller destroys them.
func (c *batchCache) views() (past, present []*ort.CustomDataTensor, err error) {
	past, present = make([]*ort.CustomDataTensor, c.slots), make([]*ort.CustomDataTensor, c.slots)
	b, kv, hd := int64(len(c.rows)), int64(c.kvHeads), int64(c.headDim)
	for i := range c.bufs {
		if past[i], err = newTensor(c.bufs[i][c.cur], c.dt, b, kv, int64(c.length), hd); err != nil {
			break
		}
		if present[i], err = newTensor(c.bufs[i][1-c.cur], c.dt, b, kv, int64(c.length+1), hd); err != nil {
			break
		}
	}
	if err != nil {
		destroyAll(past)
		destroyAll(present)
		return nil, nil, err
	}
	return past, present, nil
}

// commit records a step that ran: the present becomes the past, every row
// gains the step's column, a position for the rows in ran and a hole for
// the others.
func (c *batchCache) commit(ran []bool) {
	c.cur = 1 - c.cur
	c.length++
	for r := range c.rows {
		br := &c.rows[r]
		if ran[r] {
			br.cols = append(br.cols, 1)
			br.next++
		} else {
			br.cols = append(br.cols, 0)
		}
	}
}

func (c *batchCache) free() {
	for i := range c.bufs {
		freeBuffer(c.bufs[i][0])
		freeBuffer(c.bufs[i][1])
		c.bufs[i] = [2][]byte{}
	}
	c.rowsCap, c.lenCap = 0, 0
}

// close frees the buffers and forgets every row.
func (c *batchCache) close() {
	c.free()
	c.setRows(nil, 0)
	c.cur = 0
}

func destroyAll(ts []*ort.CustomDataTensor) {
	for _, t := range ts {
		destroy(t)
	}
}

// positionSource is a Forward cache whose positions Admit can copy: per
// cache slot a buffer laid out [kv_heads, stride, head_dim].
type positionSource interface {
	positions(i int) (buf []byte, stride int)
}

func (c *handoverCache) positions(i int) ([]byte, int) { return c.bufs[i][c.cur], c.length }
func (c *paddedCache) positions(i int) ([]byte, int)   { return c.bufs[i][0], c.stride }
