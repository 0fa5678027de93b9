//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/prism-local/prism/engine"
)

// Backend is a decoder graph loaded into ONNX Runtime with its KV cache. It
// implements engine.Backend; like every Backend it is used by one goroutine
// at a time.
type Backend struct {
	cfg  *modelConfig
	io   *ioPlan
	info engine.ModelInfo
	log  *slog.Logger

	sess    *ort.DynamicAdvancedSession
	binding *ort.IoBinding
	runOpts *ort.RunOptions

	kv        kvCache
	proofTook time.Duration // what proving the cache strategy cost at load
	// stepRef holds the step proof's logits at load, for the speculation
	// proof to compare with; nil after it.
	stepRef  [][]float32
	ids, pos intInput
	// masks[L-1] is the attention mask [1, L] of ones: views of one buffer,
	// one per reserved length, so that no step creates a tensor for its
	// mask.
	masks []*pinnedValue
	ones  []byte
	keep  *ort.Scalar[int64]
	// keepAll[n] is logits_to_keep n, for a verify step of n tokens;
	// keepNow is the one the prepared step feeds.
	keepAll []*ort.Scalar[int64]
	keepNow *ort.Scalar[int64]
	step    logitsOutput // one row: decode steps
	chunk   logitsOutput // n rows: prefill chunks, freed when decoding starts
	out     []float32    // converted or copied last-row logits
	rows    []float32    // every row of a verify step's float16 logits, converted
	// useCache holds the merged decoder's use_cache_branch values, false
	// and true, made once.
	useCache [2]*pinnedValue

	inVals, outVals []ort.Value
	boundIn         []ort.Value // what the IoBinding holds, per input slot
	boundOut        []ort.Value

	// st holds a hybrid decoder's convolution states (nil without), and
	// tokens the ids of the cached positions, which a rewind to an earlier
	// position runs again from the state's snapshot.
	st     *stateCache
	tokens []int32

	// batch holds the sequences admitted for batched decoding, nil when
	// the batch proof did not pass (or MaxBatch asked for none);
	// batchOut is the logits buffer of its steps and batchRows the rows
	// Decode returns.
	batch     *batchCache
	batchOut  []byte
	batchRows []float32
	maxBatch  int

	cached int
	closed bool
}

var (
	_ engine.Backend  = (*Backend)(nil)
	_ engine.Verifier = (*Backend)(nil)
	_ engine.Batcher  = (*Backend)(nil)
)

// Open loads the model folder dir: it reads genai_config.json or
// config.json (+ generation_config.json), loads the ONNX Runtime library,
// reads the graph's inputs and outputs, and creates the session on the
// device opts ask for. On any error nothing stays loaded. Errors are
// *engine.ModelLoadError naming the file or field at fault; a refused device
// is a *DeviceError inside it.
func Open(ctx context.Context, dir string, opts Options) (*Backend, error) {
	id := opts.ID
	if id == "" {
		id = dir
	}
	fail := func(err error) (*Backend, error) { return nil, loadError(id, err) }
	if err := opts.validate(); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	cfg, err := readConfig(dir, opts.Variant, opts.device())
	if err != nil {
		return fail(err)
	}
	lib, err := loadRuntime(opts.ORTLibrary)
	if err != nil {
		return fail(err)
	}
	io, err := readGraph(cfg)
	if err != nil {
		return fail(err)
	}
	b := &Backend{cfg: cfg, io: io, log: opts.logger(), maxBatch: opts.MaxBatch}
	contextLength := cfg.contextLength
	if io.pastLen > 0 && (contextLength == 0 || io.pastLen < contextLength) {
		contextLength = io.pastLen // a fixed KV buffer holds no more positions
	}
	b.info = engine.ModelInfo{
		ID:            id,
		VocabSize:     io.vocab,
		ContextLength: contextLength,
		EOS:           slices.Clone(cfg.eos),
		Variant:       cfg.graph.Variant,
		Defaults:      cfg.search,
	}
	if err := b.createSession(ctx, opts, lib); err != nil {
		return fail(err)
	}
	if err := b.setup(ctx, opts.ExactHandover); err != nil {
		b.Close()
		return fail(err)
	}
	b.log.Info("model loaded", "model", id, "layout", string(cfg.layout), "graph", cfg.graphPath,
		"form", string(cfg.graph.Form), "variant", variantLog(cfg.graph, opts.VariantPicked, opts.device()), "variants_not_picked", cfg.graph.NotPicked(), "device", b.info.Device,
		"kv_cache", b.info.KVCache, "kv_cache_reason", b.info.KVCacheReason, "prefill", b.info.Prefill, "prefill_reason", b.info.PrefillReason,
		"speculation", b.info.Speculation, "speculation_reason", b.info.SpeculationReason,
		"batch", b.info.Batch, "max_batch", b.info.MaxBatch, "batch_reason", b.info.BatchReason,
		"proof", b.proofTook.Round(time.Millisecond),
		"kv_type", typeName(io.kvType), "layers", io.layers, "combined_past", io.combined, "states", len(io.states), "vocab", io.vocab)
	return b, nil
}

// readGraph reads the graph's declared inputs and outputs. The signature is
// read straight from the file (see readSignature), which costs a read of the
// graph and none of the weights; a file that reader cannot follow goes to
// the runtime instead, whose error message then says what is wrong.
func readGraph(cfg *modelConfig) (*ioPlan, error) {
	if sins, souts, err := readSignature(cfg.graphPath); err == nil {
		return planIO(cfg, toInfo(sins), toInfo(souts))
	}
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	_ = so.SetGraphOptimizationLevel(ort.GraphOptimizationLevelDisableAll)
	ins, outs, err := ort.GetInputOutputInfoWithOptions(cfg.graphPath, so)
	if err != nil {
		return nil, &GraphError{Graph: cfg.graphPath, Msg: "onnx runtime cannot read it", Err: err}
	}
	return planIO(cfg, ins, outs)
}

func toInfo(sigs []valueSig) []ort.InputOutputInfo {
	out := make([]ort.InputOutputInfo, len(sigs))
	for i, s := range sigs {
		out[i] = ort.InputOutputInfo{Name: s.name, Dimensions: ort.Shape(s.dims), DataType: ort.TensorElementDataType(s.elem)}
		if s.tensor {
			out[i].OrtValueType = ort.ONNXTypeTensor
		}
	}
	return out
}

// createSession creates the session on the requested device: cuda or
// nothing for "cuda", cuda then cpu (with a warning) for "auto".
func (b *Backend) createSession(ctx context.Context, opts Options, lib string) error {
	dev := opts.device()
	if dev == DeviceCUDA || dev == DeviceAuto {
		sess, err := b.newSession(opts, DeviceCUDA, lib)
		if err == nil {
			b.sess, b.info.Device = sess, DeviceCUDA
			return nil
		}
		if dev == DeviceCUDA {
			return err
		}
		b.info.FallbackReason = err.Error()
		b.log.Warn("CUDA unavailable, running on CPU", "model", b.info.ID, "cause", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sess, err := b.newSession(opts, DeviceCPU, lib)
	if err != nil {
		return err
	}
	b.sess, b.info.Device = sess, DeviceCPU
	return nil
}

func (b *Backend) newSession(opts Options, provider, lib string) (*ort.DynamicAdvancedSession, error) {
	so, err := sessionOptions(b.cfg, opts, provider, lib)
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	sess, err := ort.NewDynamicAdvancedSession(b.cfg.graphPath, b.io.inputNames, b.io.outputNames, so)
	if err != nil {
		if provider == DeviceCUDA {
			return nil, &DeviceError{Device: DeviceCUDA, Cause: cudaSessionCause(opts.StrictCUDA, err), Err: err}
		}
		return nil, &GraphError{Graph: b.cfg.graphPath, Msg: "onnx runtime cannot load it", Err: err}
	}
	return sess, nil
}

// setup creates the binding, the step tensors and the cache, whose
// strategy chooseCache proves on the graph first.
func (b *Backend) setup(ctx context.Context, exact bool) error {
	var err error
	if b.binding, err = b.sess.CreateIoBinding(); err != nil {
		return fmt.Errorf("create io binding: %w", err)
	}
	if b.runOpts, err = ort.NewRunOptions(); err != nil {
		return fmt.Errorf("create run options: %w", err)
	}
	io := b.io
	b.ids.dt, b.pos.dt = io.idsType, io.posType
	if io.keep != "" {
		if b.keep, err = ort.NewScalar(int64(1)); err != nil {
			return err
		}
	}
	if io.useCache != "" {
		for i := range b.useCache {
			t, err := newTensor([]byte{byte(i)}, ort.TensorElementDataTypeBool, io.useCacheDims...)
			if err != nil {
				return fmt.Errorf("use_cache_branch input: %w", err)
			}
			b.useCache[i] = pin(t)
		}
	}
	b.step = logitsOutput{dt: io.logitsType, vocab: io.vocab}
	b.chunk = logitsOutput{dt: io.logitsType, vocab: io.vocab}
	b.out = make([]float32, io.vocab)
	b.inVals = make([]ort.Value, len(io.inputNames))
	b.outVals = make([]ort.Value, len(io.outputNames))
	b.boundIn = make([]ort.Value, len(io.inputNames))
	b.boundOut = make([]ort.Value, len(io.outputNames))
	if len(io.states) > 0 {
		specs := make([]stateSpec, len(io.states))
		for i, st := range io.states {
			specs[i] = st.spec
		}
		if b.st, err = newStateCache(specs); err != nil {
			return err
		}
	}
	if err := b.chooseCache(ctx, exact); err != nil {
		return err
	}
	return b.reserve(1)
}

func (b *Backend) cacheKind() string {
	switch b.kv.(type) {
	case *sharedCache:
		return KVSharedBuffer
	case *paddedCache:
		return KVPadded
	}
	return KVExact
}

// maskingCache is a cache that supplies the step's attention mask itself.
type maskingCache interface {
	mask() ort.Value
}

// Info reports the model's static facts and the device in use.
func (b *Backend) Info() engine.ModelInfo { return b.info }

// Layout reports which folder layout the model was read from.
func (b *Backend) Layout() Layout { return b.cfg.layout }

// SearchDefaults reports the sampling defaults the model folder recommends.
func (b *Backend) SearchDefaults() SearchDefaults { return b.cfg.search }

// BOS reports the beginning-of-sequence id the config names, if any.
func (b *Backend) BOS() (int32, bool) { return b.cfg.bos, b.cfg.hasBOS }

// Capacity reports how many positions the cache currently holds room for.
func (b *Backend) Capacity() int { return b.kv.capacity() }

// Reserve sizes the cache for n positions, keeping what is cached.
func (b *Backend) Reserve(n int) error {
	if b.closed {
		return engine.ErrClosed
	}
	if n < 1 {
		return fmt.Errorf("reserve %d positions: want at least 1", n)
	}
	if cl := b.info.ContextLength; cl > 0 && n > cl {
		n = cl
	}
	return b.reserve(n)
}

func (b *Backend) reserve(n int) error {
	if err := b.reserveMasks(n); err != nil {
		return err
	}
	if n <= b.kv.capacity() {
		return nil
	}
	return b.kv.reserve(n, b.cached)
}

// reserveMasks rebuilds the ones buffer at capacity n with a view for every
// length up to it, made here once rather than during decoding: the binding
// allocates for each tensor it makes, and a decode step should allocate
// nothing.
func (b *Backend) reserveMasks(n int) error {
	if _, own := b.kv.(maskingCache); own || b.io.mask == "" || n <= len(b.masks) {
		return nil
	}
	b.closeMasks()
	b.ones = make([]byte, n*elemSize(b.io.maskType))
	ones := intInput{dt: b.io.maskType, buf: b.ones}
	for i := range n {
		ones.set(i, 1)
	}
	b.masks = make([]*pinnedValue, n)
	dims := []int64{1, 0}
	for i := range b.masks {
		dims[1] = int64(i + 1)
		t, err := newTensor(b.ones, b.io.maskType, dims...)
		if err != nil {
			b.closeMasks()
			return fmt.Errorf("attention mask views for %d positions: %w", n, err)
		}
		b.masks[i] = pin(t)
	}
	return nil
}

// maskCapacity is the longest step end the reserved attention masks
// cover. It can be below the cache's capacity when the graph fixes its
// buffer's length, made whole on the first reserve.
func (b *Backend) maskCapacity() int {
	if _, own := b.kv.(maskingCache); own || b.io.mask == "" {
		return math.MaxInt
	}
	return len(b.masks)
}

// maskFor returns the attention mask [1, length] of ones, a view made by
// reserve.
func (b *Backend) maskFor(length int) (*pinnedValue, error) {
	if length < 1 || length > len(b.masks) {
		return nil, fmt.Errorf("attention mask for %d positions: only %d reserved", length, len(b.masks))
	}
	return b.masks[length-1], nil
}

func (b *Backend) closeMasks() {
	for _, t := range b.masks {
		if t != nil {
			destroy(t.CustomDataTensor)
		}
	}
	b.masks, b.ones = nil, nil
}

// Forward runs ids at positions [pos, pos+len(ids)) and returns the logits
// of the last one, valid until the next call.
func (b *Backend) Forward(ctx context.Context, ids []int32, pos int) ([]float32, error) {
	if err := b.startStep(ctx, ids, pos); err != nil {
		return nil, err
	}
	return b.run(ctx, ids, pos, false)
}

// Verify runs ids at positions [pos, pos+len(ids)) as Forward does and
// returns the logits of every position, row after row, valid until the
// next call (engine.Verifier). Only a graph whose speculation proof at
// load passed takes it.
func (b *Backend) Verify(ctx context.Context, ids []int32, pos int) ([]float32, error) {
	if b.info.Speculation != engine.SpeculationPromptLookup {
		return nil, b.stepError(pos, len(ids), "speculation is off on this graph: "+b.info.SpeculationReason, nil)
	}
	return b.verify(ctx, ids, pos)
}

func (b *Backend) verify(ctx context.Context, ids []int32, pos int) ([]float32, error) {
	if err := b.startStep(ctx, ids, pos); err != nil {
		return nil, err
	}
	return b.run(ctx, ids, pos, true)
}

// startStep checks a step of ids at pos and drops the cached positions
// at and above pos.
func (b *Backend) startStep(ctx context.Context, ids []int32, pos int) error {
	if b.closed {
		return engine.ErrClosed
	}
	n := len(ids)
	switch {
	case n == 0:
		return b.stepError(pos, 0, "no ids", nil)
	case pos < 0 || pos > b.cached:
		return b.stepError(pos, n, fmt.Sprintf("only %d positions are cached", b.cached), nil)
	case b.info.ContextLength > 0 && pos+n > b.info.ContextLength:
		return &engine.ContextLengthError{PromptTokens: pos + n, ContextLength: b.info.ContextLength}
	case n > 1 && pos > 0 && b.info.Prefill == engine.PrefillWhole:
		return b.stepError(pos, n, fmt.Sprintf("the graph takes no multi-token step on a past (%s); run the prompt from position 0", b.info.PrefillReason), nil)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if pos < b.cached {
		return b.rewind(ctx, pos)
	}
	return nil
}

// rewind drops the cached positions at and above pos. A KV cache is cut
// back; a hybrid decoder's state cannot be, so it is restored from the
// newest snapshot at or before pos, and the cached tokens from there to
// pos run again.
func (b *Backend) rewind(ctx context.Context, pos int) error {
	from := pos
	if b.st != nil {
		from = b.st.restore(pos)
		if from > 0 && pos-from > 1 && b.info.Prefill == engine.PrefillWhole {
			b.st.reset()
			from = 0
		}
	}
	if err := b.truncate(from); err != nil {
		return b.stepError(pos, 0, "drop the cached positions from the step's on", err)
	}
	if from == pos {
		return nil
	}
	replay := slices.Clone(b.tokens[from:pos])
	b.tokens = b.tokens[:from]
	_, err := b.run(ctx, replay, from, false)
	return err
}

// stepError is the StepError of a step of n tokens at pos.
func (b *Backend) stepError(pos, n int, msg string, err error) error {
	return &StepError{Graph: b.cfg.graphPath, Pos: pos, Tokens: n, Msg: msg, Err: err}
}

// run runs one runtime step of ids at pos == b.cached and returns the
// logits of the last position, or of every position when all is set.
// Every failure is a *StepError and leaves the cache as it was before the
// step.
func (b *Backend) run(ctx context.Context, ids []int32, pos int, all bool) ([]float32, error) {
	n := len(ids)
	if need := pos + n; need > b.kv.capacity() || need > b.maskCapacity() {
		// Grow past what Reserve asked for: double, bounded by the context.
		grow := max(need, 2*b.kv.capacity())
		if cl := b.info.ContextLength; cl > 0 {
			grow = min(grow, cl)
		}
		if err := b.reserve(grow); err != nil {
			return nil, b.stepError(pos, n, fmt.Sprintf("grow the cache to %d positions", grow), err)
		}
	}
	b.keepNow = b.keep
	if all && n > 1 && b.keep != nil {
		// A graph that keeps the last logits_to_keep rows keeps them all.
		// (onnxruntime_go's Scalar.Set does not reach the runtime's
		// value, so each count has a scalar of its own, made once.)
		for len(b.keepAll) <= n {
			b.keepAll = append(b.keepAll, nil)
		}
		if b.keepAll[n] == nil {
			k, err := ort.NewScalar(int64(n))
			if err != nil {
				return nil, b.stepError(pos, n, "make the logits_to_keep input", err)
			}
			b.keepAll[n] = k
		}
		b.keepNow = b.keepAll[n]
	}
	if err := b.prepare(ids, pos); err != nil {
		return nil, b.stepError(pos, n, "prepare the inputs", err)
	}
	out, rows := &b.step, 1
	if n > 1 && (b.keep == nil || all) {
		out, rows = &b.chunk, n
	}
	if err := out.shape(rows); err != nil {
		b.kv.abort()
		return nil, b.stepError(pos, n, "shape the logits output", err)
	}
	b.outVals[0] = out.t
	for i := range b.io.presents {
		b.outVals[1+i] = b.kv.present(i)
	}
	for i := range b.io.states {
		b.outVals[1+len(b.io.presents)+i] = b.st.present(i)
	}
	var err error
	if n == 1 {
		err = b.runBound()
	} else {
		err = b.runCancellable(ctx, b.inVals, b.outVals)
	}
	if err != nil {
		b.kv.abort()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, b.stepError(pos, n, "onnx runtime", err)
	}
	b.kv.commit()
	b.cached = pos + n
	if b.st != nil {
		b.st.commit()
		b.tokens = append(b.tokens[:pos], ids...)
		if n > 1 {
			b.st.snapshot(b.cached)
		}
	}
	if all {
		return out.all(&b.rows), nil
	}
	if out == &b.chunk {
		// Copied out: the chunk buffer (rows of the longest step so far,
		// kept until Close) is rewritten by the next multi-token step.
		return out.last(b.out, false), nil
	}
	return out.last(b.out, true), nil
}

// truncate drops cached positions at and above to.
func (b *Backend) truncate(to int) error {
	if err := b.kv.truncate(to, b.cached); err != nil {
		return err
	}
	b.cached = to
	if b.st != nil {
		b.tokens = b.tokens[:min(to, len(b.tokens))]
		b.st.drop(to + 1)
	}
	return nil
}

// prepare fills the step's inputs.
func (b *Backend) prepare(ids []int32, pos int) error {
	n := len(ids)
	if err := b.ids.shape(n); err != nil {
		return err
	}
	for i, id := range ids {
		b.ids.set(i, int64(id))
	}
	if b.io.positions != "" {
		if err := b.pos.shape(n); err != nil {
			return err
		}
		for i := range n {
			b.pos.set(i, int64(pos+i))
		}
	}
	var mask ort.Value
	if b.io.mask != "" {
		if _, own := b.kv.(maskingCache); !own {
			m, err := b.maskFor(pos + n)
			if err != nil {
				return err
			}
			mask = m
		}
	}
	if err := b.kv.prepare(pos, n); err != nil {
		return err
	}
	if mc, own := b.kv.(maskingCache); own {
		mask = mc.mask()
	}
	vals := b.inVals[:0]
	vals = append(vals, b.ids.t)
	if mask != nil {
		vals = append(vals, mask)
	}
	if b.io.positions != "" {
		vals = append(vals, b.pos.t)
	}
	if b.keep != nil {
		vals = append(vals, b.keepNow)
	}
	if b.io.useCache != "" {
		// The past is empty exactly at position 0 (a padded past too:
		// padTo(0) is 0), where a merged decoder takes its branch without
		// past.
		vals = append(vals, b.useCache[min(pos, 1)])
	}
	for i := range b.io.pasts {
		vals = append(vals, b.kv.past(i))
	}
	for i := range b.io.states {
		vals = append(vals, b.st.past(i))
	}
	b.inVals = vals
	return nil
}

// runBound runs a step through the IoBinding, rebinding only the values
// that changed since the last step: a decode step on the shared cache binds
// nothing and allocates nothing.
func (b *Backend) runBound() error {
	for i, v := range b.inVals {
		if b.boundIn[i] != v {
			if err := b.binding.BindInput(b.io.inputNames[i], v); err != nil {
				return err
			}
			b.boundIn[i] = v
		}
	}
	for i, v := range b.outVals {
		if b.boundOut[i] != v {
			if err := b.binding.BindOutput(b.io.outputNames[i], v); err != nil {
				return err
			}
			b.boundOut[i] = v
		}
	}
	return b.sess.RunWithBinding(b.binding)
}

// runCancellable runs a multi-token step (or a batched decode step) with
// run options that ctx can terminate, so cancelling abandons a long
// prefill chunk mid-way.
func (b *Backend) runCancellable(ctx context.Context, ins, outs []ort.Value) error {
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = b.runOpts.Terminate()
	})
	err := b.sess.RunWithOptions(ins, outs, b.runOpts)
	if !stop() {
		<-done
		_ = b.runOpts.UnsetTerminate()
	}
	return err
}

// Close releases the session, the cache and every tensor. It is idempotent.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.binding != nil {
		b.binding.ClearBoundInputs()
		b.binding.ClearBoundOutputs()
		_ = b.binding.Destroy()
	}
	if b.kv != nil {
		b.kv.close()
	}
	if b.batch != nil {
		b.batch.close()
	}
	b.st.close()
	b.ids.close()
	b.pos.close()
	b.closeMasks()
	b.step.close()
	b.chunk.close()
	for _, k := range b.keepAll {
		if k != nil {
			_ = k.Destroy()
		}
	}
	if b.keep != nil {
		_ = b.keep.Destroy()
	}
	for _, v := range b.useCache {
		if v != nil {
			destroy(v.CustomDataTensor)
		}
	}
	if b.runOpts != nil {
		_ = b.runOpts.Destroy()
	}
	var err error
	if b.sess != nil {
		err = b.sess.Destroy()
	}
	b.inVals, b.outVals, b.boundIn, b.boundOut = nil, nil, nil, nil
	return err
}
