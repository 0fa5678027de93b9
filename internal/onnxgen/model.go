package onnxgen

import (
	"fmt"
	"math"
)

// Names of the graph's inputs and outputs; both layouts use the same ones.
const (
	// InputIDs is the int64 [batch, seq] token input.
	InputIDs = "input_ids"
	// AttentionMask is the int64 [batch, past+seq] mask input (1 = attend).
	AttentionMask = "attention_mask"
	// PositionIDs is the int64 [batch, seq] position input (absent with
	// Config.RotaryInOp).
	PositionIDs = "position_ids"
	// Logits is the [batch, seq, vocab] output.
	Logits = "logits"
	// LogitsToKeep is the int64 scalar input (Config.LogitsToKeep): how
	// many of the last positions get logits.
	LogitsToKeep = "logits_to_keep"
	// UseCacheBranch is the merged decoder's bool [1] input: false on the
	// first step (the past is then empty), true on every later one.
	UseCacheBranch = "use_cache_branch"
)

// PastKey names layer l's past key input.
func PastKey(l int) string { return fmt.Sprintf("past_key_values.%d.key", l) }

// PastValue names layer l's past value input.
func PastValue(l int) string { return fmt.Sprintf("past_key_values.%d.value", l) }

// PresentKey names layer l's present key output.
func PresentKey(l int) string { return fmt.Sprintf("present.%d.key", l) }

// PresentValue names layer l's present value output.
func PresentValue(l int) string { return fmt.Sprintf("present.%d.value", l) }

// PastConv names convolution layer l's state input (Config.ConvLayers):
// [batch, hidden, kernel-1], the last kernel-1 gated inputs of the layer's
// convolution.
func PastConv(l int) string { return fmt.Sprintf("past_conv.%d", l) }

// PresentConv names convolution layer l's state output.
func PresentConv(l int) string { return fmt.Sprintf("present_conv.%d", l) }

// PastRecurrent names recurrent layer l's state input
// (Config.RecurrentLayers): [batch, hidden].
func PastRecurrent(l int) string { return fmt.Sprintf("past_recurrent.%d", l) }

// PresentRecurrent names recurrent layer l's state output.
func PresentRecurrent(l int) string { return fmt.Sprintf("present_recurrent.%d", l) }

// PastConvState names convolution layer l's state input under StatesKV.
func PastConvState(l int) string { return fmt.Sprintf("past_key_values.%d.conv_state", l) }

// PresentConvState names convolution layer l's state output under StatesKV.
func PresentConvState(l int) string { return fmt.Sprintf("present.%d.conv_state", l) }

// PastRecurrentState names recurrent layer l's state input under StatesKV.
func PastRecurrentState(l int) string { return fmt.Sprintf("past_key_values.%d.recurrent_state", l) }

// PresentRecurrentState names recurrent layer l's state output under StatesKV.
func PresentRecurrentState(l int) string { return fmt.Sprintf("present.%d.recurrent_state", l) }

// stateNames are layer l's state input and output names under the
// config's StateNames: the convolution's when conv, else the recurrent
// layer's.
func (c Config) stateNames(l int, conv bool) (string, string) {
	kind := "recurrent"
	if conv {
		kind = "conv"
	}
	switch {
	case c.StateNames == StatesPast:
		return fmt.Sprintf("past.%d.%s", l, kind), fmt.Sprintf("present.%d.%s", l, kind)
	case c.StateNames == StatesKV && conv:
		return PastConvState(l), PresentConvState(l)
	case c.StateNames == StatesKV:
		return PastRecurrentState(l), PresentRecurrentState(l)
	case conv:
		return PastConv(l), PresentConv(l)
	}
	return PastRecurrent(l), PresentRecurrent(l)
}

// PastCombined names layer l's combined key/value input (Config.CombinedPast).
func PastCombined(l int) string { return fmt.Sprintf("past_%d", l) }

// PresentCombined names layer l's combined key/value output (Config.CombinedPast).
func PresentCombined(l int) string { return fmt.Sprintf("present_%d", l) }

// scriptBias is added to the scripted token's logit; random-weight logits
// (within about ±20) stay far below it, and so do Config.Prefer's raises.
const scriptBias = 1000

// Weight naming and initialization, shared by the graph and the oracle.

func (c Config) wt(name string, scale, offset float32) weight {
	return newWeight(c.Seed, name, scale, offset)
}

func (c Config) embedWeight() weight { return c.wt("model.embed_tokens.weight", 1, 0) }

func (c Config) normWeight(name string) weight { return c.wt(name, 0.1, 1) }

func (c Config) projWeight(name string, in int) weight {
	return c.wt(name, float32(1/math.Sqrt(float64(in))), 0)
}

func (c Config) biasWeight(name string) weight { return c.wt(name, 0.1, 0) }

func (c Config) convWeight(name string) weight {
	return c.wt(name, float32(1/math.Sqrt(float64(c.convKernel()))), 0)
}

func layerPrefix(l int) string { return fmt.Sprintf("model.layers.%d.", l) }

// lmHead is the logical [hidden, vocab] output projection.
func (c Config) lmHead() source {
	if c.Tied {
		return transposed{src: c.embedWeight(), rows: c.Vocab, cols: c.Hidden}
	}
	return c.projWeight("lm_head.weight", c.Hidden)
}

// invFreq are the rotary inverse frequencies theta^(-2i/headSize).
func (c Config) invFreq() []float32 {
	half := c.HeadSize() / 2
	f := make([]float32, half)
	for i := range f {
		f[i] = float32(1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadSize())))
	}
	return f
}

// ioType is the ONNX element type of KV cache and logits.
func (c Config) ioType() int {
	if c.DType == FP16 {
		return dtFloat16
	}
	return dtFloat
}

// buildGraph builds the decoder graph for a resolved config.
func buildGraph(c Config) *builder {
	g := &graphBuild{c: c, b: newBuilder(c.Seed), hd: c.HeadSize(), group: c.Heads / c.KVHeads}
	g.build()
	return g.b
}

type graphBuild struct {
	c     Config
	b     *builder
	hd    int
	group int

	cos, sin    string // [B, 1, S, hd] (plain) or [B, S, 1, hd] (gqa); [Context, hd/2] caches with RotaryInOp
	maskBias    string // [B, 1, 1, S, T] additive mask (plain)
	seqLen      string // S, int64 scalar
	totalLen    string // T, int64 scalar
	seqlensK    string // GQA: int32 [B]
	totalLenI32 string // GQA: int32 scalar
	ids         string // input_ids
	mask        string // attention_mask
}

func (g *graphBuild) build() {
	c, b := g.c, g.b
	io := c.ioType()
	batch, seq := dim{param: "batch_size"}, dim{param: "sequence_length"}
	total := dim{param: "total_sequence_length"}
	past := dim{param: "past_sequence_length"}
	kv, hd := dim{size: int64(c.KVHeads)}, dim{size: int64(g.hd)}
	present := total
	if c.StaticCache {
		// One buffer of Context positions: a GroupQueryAttention present
		// is then the past's own length (max(total, past)).
		past = dim{size: int64(c.Context)}
		if c.Attention == AttentionGQA {
			present = past
		}
	}

	ids := b.input(InputIDs, dtInt64, []dim{batch, seq})
	mask := b.input(AttentionMask, dtInt64, []dim{batch, total})
	pos := ""
	if !c.RotaryInOp {
		pos = b.input(PositionIDs, dtInt64, []dim{batch, seq})
	}
	pastK := make([]string, c.Layers)
	pastV := make([]string, c.Layers)
	for l := 0; l < c.Layers; l++ {
		if c.IsConv(l) {
			in, _ := c.stateNames(l, true)
			pastK[l] = b.input(in, io, []dim{batch, {size: int64(c.Hidden)}, {size: int64(c.convKernel() - 1)}})
			continue
		}
		if c.IsRecurrent(l) {
			in, _ := c.stateNames(l, false)
			pastK[l] = b.input(in, io, []dim{batch, {size: int64(c.Hidden)}})
			continue
		}
		if c.CombinedPast {
			both := b.input(PastCombined(l), io, []dim{{size: 2}, batch, kv, past, hd})
			pastK[l] = b.op("Gather", []string{both, b.scalarI64(0)}, attrI("axis", 0))
			pastV[l] = b.op("Gather", []string{both, b.scalarI64(1)}, attrI("axis", 0))
			continue
		}
		pastK[l] = b.input(PastKey(l), io, []dim{batch, kv, past, hd})
		pastV[l] = b.input(PastValue(l), io, []dim{batch, kv, past, hd})
	}

	if c.Merged {
		g.selectPast(b.input(UseCacheBranch, dtBool, []dim{{size: 1}}), pastK, pastV)
	}
	g.lengths(ids, mask)
	if c.RotaryInOp {
		g.rotaryCaches()
	} else {
		g.rotary(pos)
	}
	if c.Attention == AttentionGQA {
		g.gqaLengths(mask)
	} else {
		g.causalMask(mask, pos)
	}
	g.ids = ids
	g.mask = mask

	embed := b.floatWeight("model.embed_tokens.weight", c.embedWeight(), int64(c.Vocab), int64(c.Hidden))
	x := b.op("Gather", []string{embed, ids}, attrI("axis", 0))
	var layer0PastV string
	for l := 0; l < c.Layers; l++ {
		if c.IsConv(l) {
			state := pastK[l]
			if io != dtFloat {
				state = b.op("Cast", []string{state}, attrI("to", dtFloat))
			}
			var next string
			x, next = g.convLayer(l, x, state)
			if io != dtFloat {
				next = b.op("Cast", []string{next}, attrI("to", int64(io)))
			}
			_, out := c.stateNames(l, true)
			b.output(next, out, io, []dim{batch, {size: int64(c.Hidden)}, {size: int64(c.convKernel() - 1)}})
			continue
		}
		if c.IsRecurrent(l) {
			state := pastK[l]
			if io != dtFloat {
				state = b.op("Cast", []string{state}, attrI("to", dtFloat))
			}
			var next string
			x, next = g.recurrentLayer(l, x, state)
			if io != dtFloat {
				next = b.op("Cast", []string{next}, attrI("to", int64(io)))
			}
			_, out := c.stateNames(l, false)
			b.output(next, out, io, []dim{batch, {size: int64(c.Hidden)}})
			continue
		}
		pk, pv := pastK[l], pastV[l]
		if io != dtFloat && c.Attention != AttentionGQA {
			pk = b.op("Cast", []string{pk}, attrI("to", dtFloat))
			pv = b.op("Cast", []string{pv}, attrI("to", dtFloat))
		}
		if l == 0 {
			layer0PastV = pv
		}
		var presK, presV string
		x, presK, presV = g.layer(l, x, pk, pv)
		if io != dtFloat && c.Attention != AttentionGQA {
			presK = b.op("Cast", []string{presK}, attrI("to", int64(io)))
			presV = b.op("Cast", []string{presV}, attrI("to", int64(io)))
		}
		if c.CombinedPast {
			axis := b.i64(0)
			both := b.op("Concat", []string{b.op("Unsqueeze", []string{presK, axis}), b.op("Unsqueeze", []string{presV, axis})}, attrI("axis", 0))
			b.output(both, PresentCombined(l), io, []dim{{size: 2}, batch, kv, present, hd})
			continue
		}
		b.output(presK, PresentKey(l), io, []dim{batch, kv, present, hd})
		b.output(presV, PresentValue(l), io, []dim{batch, kv, present, hd})
	}
	x = g.rmsNorm(x, "model.norm.weight")
	rows := seq
	var keepFrom string
	if c.LogitsToKeep {
		keep := b.input(LogitsToKeep, dtInt64, nil)
		keepFrom = b.op("Neg", []string{b.op("Unsqueeze", []string{keep, b.i64(0)})})
		x = b.op("Slice", []string{x, keepFrom, b.i64(math.MaxInt64), b.i64(1)})
		rows = dim{param: "kept_sequence_length"}
	}
	logits := g.linear(x, "lm_head.weight", c.lmHead(), c.Hidden, c.Vocab, embed)
	if c.Scripted() {
		bias := g.scriptLogitBias(layer0PastV)
		if keepFrom != "" {
			bias = b.op("Slice", []string{bias, keepFrom, b.i64(math.MaxInt64), b.i64(1)})
		}
		logits = b.op("Add", []string{logits, bias})
		if len(c.Prefer) > 0 {
			logits = b.op("Add", []string{logits, b.f32(c.preferBias(), int64(c.Vocab))})
		}
	}
	if c.DecodeSkew {
		skew := make([]float32, c.Vocab)
		for i := range skew {
			skew[i] = float32(2 * math.Sin(float64(i)))
		}
		decode := b.op("Equal", []string{g.seqLen, b.scalarI64(1)})
		logits = b.op("Add", []string{logits, b.op("Where", []string{decode, b.f32(skew, int64(c.Vocab)), b.scalarF32(0)})})
	}
	if io != dtFloat {
		logits = b.op("Cast", []string{logits}, attrI("to", int64(io)))
	}
	// Outputs: logits first, then the presents (in layer order).
	b.output(logits, Logits, io, []dim{batch, rows, {size: int64(c.Vocab)}})
	n := len(b.outputs)
	b.outputs = append(b.outputs[n-1:], b.outputs[:n-1]...)
	b.nameOutputs()
}

// selectPast is the merged decoder's branch: an If node on useCache whose
// then branch passes the past inputs on and whose else branch (the first
// step, no cache yet) gives an empty past, as optimum's merged export runs
// the decoder without past there. The selected pasts replace pastK and
// pastV.
func (g *graphBuild) selectPast(useCache string, pastK, pastV []string) {
	b := g.b
	io := g.c.ioType()
	zero, axis := b.i64(0), b.i64(2)
	var then, els subgraph
	then.name, els.name = "with_past", "without_past"
	shape := []dim{{param: "batch_size"}, {size: int64(g.c.KVHeads)}, {param: "past_sequence_length"}, {size: int64(g.hd)}}
	empty := []dim{{param: "batch_size"}, {size: int64(g.c.KVHeads)}, {size: 0}, {size: int64(g.hd)}}
	var pasts []string
	for l := range pastK {
		pasts = append(pasts, pastK[l], pastV[l])
	}
	for i, p := range pasts {
		t, e := fmt.Sprintf("with_past_%d", i), fmt.Sprintf("without_past_%d", i)
		then.nodes = append(then.nodes, node{name: b.fresh("Identity"), opType: "Identity", inputs: []string{p}, outputs: []string{t}})
		then.outputs = append(then.outputs, valueInfo{name: t, dtype: io, shape: shape})
		els.nodes = append(els.nodes, node{name: b.fresh("Slice"), opType: "Slice", inputs: []string{p, zero, zero, axis}, outputs: []string{e}})
		els.outputs = append(els.outputs, valueInfo{name: e, dtype: io, shape: empty})
	}
	outs := b.opN("", "If", []string{useCache}, len(pasts), attrG("then_branch", &then), attrG("else_branch", &els))
	for l := range pastK {
		pastK[l], pastV[l] = outs[2*l], outs[2*l+1]
	}
}

// lengths derives S (chunk length) and T (total length) as int64 scalars.
func (g *graphBuild) lengths(ids, mask string) {
	b := g.b
	one := b.scalarI64(1)
	g.seqLen = b.op("Gather", []string{b.op("Shape", []string{ids}), one}, attrI("axis", 0))
	g.totalLen = b.op("Gather", []string{b.op("Shape", []string{mask}), one}, attrI("axis", 0))
}

// rotary computes cos and sin of position_ids * inv_freq, duplicated to the
// full head size (rotate-half convention).
func (g *graphBuild) rotary(pos string) {
	b := g.b
	half := int64(g.hd / 2)
	pf := b.op("Cast", []string{pos}, attrI("to", dtFloat))
	pf = b.op("Unsqueeze", []string{pf, b.i64(-1)})                  // [B, S, 1]
	freqs := b.op("Mul", []string{pf, b.f32(g.c.invFreq(), half)})   // [B, S, half]
	emb := b.op("Concat", []string{freqs, freqs}, attrI("axis", -1)) // [B, S, hd]
	axis := int64(1)                                                 // [B, 1, S, hd] for BNSH
	if g.c.Attention == AttentionGQA {
		axis = 2 // [B, S, 1, hd] for BSNH
	}
	g.cos = b.op("Unsqueeze", []string{b.op("Cos", []string{emb}), b.i64(axis)})
	g.sin = b.op("Unsqueeze", []string{b.op("Sin", []string{emb}), b.i64(axis)})
}

// rotaryCaches are GroupQueryAttention's cos_cache and sin_cache:
// [Context, head_size/2] of cos/sin(position * inv_freq), in the op's type.
func (g *graphBuild) rotaryCaches() {
	c, b := g.c, g.b
	inv := c.invFreq()
	half := len(inv)
	dims := []int64{int64(c.Context), int64(half)}
	angle := func(i int) float64 { return float64(float32(i/half) * inv[i%half]) }
	g.cos = b.typedWeight("rotary.cos_cache", c.ioType(), fnSource(func(i int) float32 { return float32(math.Cos(angle(i))) }), dims...)
	g.sin = b.typedWeight("rotary.sin_cache", c.ioType(), fnSource(func(i int) float32 { return float32(math.Sin(angle(i))) }), dims...)
}

// applyRotary rotates x (last axis = head size) by the precomputed angles.
func (g *graphBuild) applyRotary(x string) string {
	b := g.b
	half := int64(g.hd / 2)
	x1 := b.op("Slice", []string{x, b.i64(0), b.i64(half), b.i64(-1)})
	x2 := b.op("Slice", []string{x, b.i64(half), b.i64(int64(g.hd)), b.i64(-1)})
	rot := b.op("Concat", []string{b.op("Neg", []string{x2}), x1}, attrI("axis", -1))
	return b.op("Add", []string{b.op("Mul", []string{x, g.cos}), b.op("Mul", []string{rot, g.sin})})
}

// causalMask builds the additive mask [B, 1, 1, S, T]: with MaskCache,
// query i (cache index T-S+i) may see key j when j <= T-S+i; with
// MaskPositions, when j <= position_ids[b, i]; with MaskSquare, the [S, S]
// triangle j <= i expanded to [S, T], which is MaskCache's where it runs
// (T = S, or S = 1 where a row of ones broadcasts). Always only where
// attention_mask[b, j] = 1.
func (g *graphBuild) causalMask(mask, pos string) {
	b := g.b
	zero, one := b.scalarI64(0), b.scalarI64(1)
	kpos := b.op("Range", []string{zero, g.totalLen, one})
	var causal string
	if g.c.Mask == MaskPositions {
		causal = b.op("LessOrEqual", []string{
			b.op("Unsqueeze", []string{kpos, b.i64(0)}),      // [1, T]
			b.op("Unsqueeze", []string{pos, b.i64(1, 2, 4)}), // [B, 1, 1, S, 1]
		}) // [B, 1, 1, S, T]
	} else if g.c.Mask == MaskSquare {
		qpos := b.op("Range", []string{zero, g.seqLen, one})
		tri := b.op("LessOrEqual", []string{
			b.op("Unsqueeze", []string{qpos, b.i64(0)}), // [1, S]
			b.op("Unsqueeze", []string{qpos, b.i64(1)}), // [S, 1]
		}) // [S, S]
		shape := b.op("Concat", []string{
			b.op("Unsqueeze", []string{g.seqLen, b.i64(0)}),
			b.op("Unsqueeze", []string{g.totalLen, b.i64(0)}),
		}, attrI("axis", 0))
		causal = b.op("Expand", []string{tri, shape}) // [S, T]: S = T or S = 1 only
	} else {
		start := b.op("Sub", []string{g.totalLen, g.seqLen})
		qpos := b.op("Range", []string{start, g.totalLen, one})
		causal = b.op("LessOrEqual", []string{
			b.op("Unsqueeze", []string{kpos, b.i64(0)}), // [1, T]
			b.op("Unsqueeze", []string{qpos, b.i64(1)}), // [S, 1]
		}) // [S, T]
	}
	am := b.op("Cast", []string{mask}, attrI("to", dtBool))
	am = b.op("Unsqueeze", []string{am, b.i64(1, 2, 3)}) // [B, 1, 1, 1, T]
	allowed := b.op("And", []string{causal, am})         // [B, 1, 1, S, T]
	g.maskBias = b.op("Where", []string{allowed, b.scalarF32(0), b.scalarF32(maskValue)})
}

// maskValue is added to the scores of masked positions.
const maskValue = -1e9

// gqaLengths derives GroupQueryAttention's seqlens_k (attention_mask row
// sums minus one) and total_sequence_length (attention_mask width), as the
// onnxruntime-genai builder does.
func (g *graphBuild) gqaLengths(mask string) {
	b := g.b
	sum := b.op("ReduceSum", []string{mask, b.i64(1)}, attrI("keepdims", 0))
	g.seqlensK = b.op("Cast", []string{b.op("Sub", []string{sum, b.scalarI64(1)})}, attrI("to", dtInt32))
	g.totalLenI32 = b.op("Cast", []string{g.totalLen}, attrI("to", dtInt32))
}

// rmsNorm is x / sqrt(mean(x^2) + eps) * weight over the last axis.
func (g *graphBuild) rmsNorm(x, name string) string {
	b := g.b
	w := b.floatWeight(name, g.c.normWeight(name), int64(g.c.Hidden))
	// Pow(x, 2) rather than Mul(x, x): it is what exports of RMSNorm carry,
	// and the pattern ONNX Runtime fuses into one SimplifiedLayerNormalization.
	ms := b.op("ReduceMean", []string{b.op("Pow", []string{x, b.scalarF32(2)})}, attrInts("axes", -1), attrI("keepdims", 1))
	rms := b.op("Sqrt", []string{b.op("Add", []string{ms, b.scalarF32(float32(g.c.RMSNormEps))})})
	return b.op("Mul", []string{b.op("Div", []string{x, rms}), w})
}

// linear is x @ W for the logical [in, out] matrix src: a MatMul over a
// float initializer, or MatMulNBits over its 4-bit form. tiedEmbed, when
// set and the config is tied and unquantized, is transposed instead of
// storing the matrix twice.
func (g *graphBuild) linear(x, name string, src source, in, out int, tiedEmbed string) string {
	b := g.b
	if g.c.Quant == QuantInt4 {
		qb, sc := b.int4Weight(name, src, in, out)
		return b.opN("com.microsoft", "MatMulNBits", []string{x, qb, sc}, 1,
			attrI("K", int64(in)), attrI("N", int64(out)), attrI("bits", 4), attrI("block_size", blockSize),
			attrI("accuracy_level", int64(g.c.Int4Accuracy)))[0]
	}
	var w string
	if tiedEmbed != "" && g.c.Tied {
		w = b.op("Transpose", []string{tiedEmbed}, attrInts("perm", 1, 0))
	} else {
		w = b.floatWeight(name, src, int64(in), int64(out))
	}
	return b.op("MatMul", []string{x, w})
}

// proj is a linear projection with an optional bias (qwen2 q/k/v).
func (g *graphBuild) proj(x, name string, in, out int, bias bool) string {
	y := g.linear(x, name+".weight", g.c.projWeight(name+".weight", in), in, out, "")
	if bias {
		bw := g.b.floatWeight(name+".bias", g.c.biasWeight(name+".bias"), int64(out))
		y = g.b.op("Add", []string{y, bw})
	}
	return y
}

// convLayer adds short-convolution layer l (Config.ConvLayers), as LFM2
// has them: in_proj splits into gates b, c and input u; b·u, over the
// state's last kernel-1 values and the chunk's, goes through a depthwise
// causal convolution; c gates its output, out_proj maps it back. It
// returns the new hidden state and the next state, the last kernel-1
// values of b·u.
func (g *graphBuild) convLayer(l int, x, state string) (string, string) {
	c, b := g.c, g.b
	p := layerPrefix(l)
	H, K := int64(c.Hidden), int64(c.convKernel())
	h := g.rmsNorm(x, p+"input_layernorm.weight")
	bcu := g.proj(h, p+"conv.in_proj", c.Hidden, 3*c.Hidden, false) // [B, S, 3H]
	gate := b.op("Slice", []string{bcu, b.i64(0), b.i64(H), b.i64(-1)})
	out := b.op("Slice", []string{bcu, b.i64(H), b.i64(2 * H), b.i64(-1)})
	u := b.op("Slice", []string{bcu, b.i64(2 * H), b.i64(3 * H), b.i64(-1)})
	bu := b.op("Transpose", []string{b.op("Mul", []string{gate, u})}, attrInts("perm", 0, 2, 1)) // [B, H, S]
	all := b.op("Concat", []string{state, bu}, attrI("axis", 2))                                 // [B, H, K-1+S]
	w := b.floatWeight(p+"conv.conv.weight", c.convWeight(p+"conv.conv.weight"), H, 1, K)
	conv := b.op("Conv", []string{all, w}, attrI("group", H), attrInts("kernel_shape", K)) // [B, H, S]
	next := b.op("Slice", []string{all, b.i64(-(K - 1)), b.i64(math.MaxInt64), b.i64(2)})
	y := b.op("Mul", []string{out, b.op("Transpose", []string{conv}, attrInts("perm", 0, 2, 1))})
	o := g.proj(y, p+"conv.out_proj", c.Hidden, c.Hidden, false)
	x = b.op("Add", []string{x, o})
	return g.mlp(l, x), next
}

// recurrentLayer adds linear recurrent layer l (Config.RecurrentLayers):
// in_proj gives the input u and the output gate; h_t = a ⊙ h_(t-1) + u_t
// with the layer's decay a per channel, computed for the whole chunk at
// once as h_t = a^(t+1) ⊙ h_(-1) + Σ_(j≤t) a^(t-j) ⊙ u_j; sigmoid(gate) ⊙ h
// goes through out_proj. It returns the new hidden state and the next
// state, the chunk's last h.
func (g *graphBuild) recurrentLayer(l int, x, state string) (string, string) {
	c, b := g.c, g.b
	p := layerPrefix(l)
	H := int64(c.Hidden)
	h := g.rmsNorm(x, p+"input_layernorm.weight")
	ug := g.proj(h, p+"recurrent.in_proj", c.Hidden, 2*c.Hidden, false) // [B, S, 2H]
	u := b.op("Slice", []string{ug, b.i64(0), b.i64(H), b.i64(-1)})
	gate := b.op("Slice", []string{ug, b.i64(H), b.i64(2 * H), b.i64(-1)})
	loga := c.recurrentLogDecay(l)
	t := b.op("Cast", []string{b.op("Range", []string{b.scalarI64(0), g.seqLen, b.scalarI64(1)})}, attrI("to", dtFloat)) // [S]
	diff := b.op("Sub", []string{b.op("Unsqueeze", []string{t, b.i64(1)}), b.op("Unsqueeze", []string{t, b.i64(0)})})    // [S, S]: t - j
	decay := b.op("Exp", []string{b.op("Mul", []string{b.op("Unsqueeze", []string{diff, b.i64(0)}), b.f32(loga, H, 1, 1)})})
	decay = b.op("Where", []string{b.op("GreaterOrEqual", []string{diff, b.scalarF32(0)}), decay, b.scalarF32(0)}) // [H, S, S]
	uT := b.op("Unsqueeze", []string{b.op("Transpose", []string{u}, attrInts("perm", 0, 2, 1)), b.i64(3)})         // [B, H, S, 1]
	hs := b.op("Squeeze", []string{b.op("MatMul", []string{decay, uT}), b.i64(3)})                                 // [B, H, S]
	carry := b.op("Exp", []string{b.op("Mul", []string{b.op("Unsqueeze", []string{b.op("Add", []string{t, b.scalarF32(1)}), b.i64(0)}), b.f32(loga, H, 1)})})
	all := b.op("Add", []string{hs, b.op("Mul", []string{b.op("Unsqueeze", []string{state, b.i64(2)}), carry})}) // [B, H, S]
	next := b.op("Squeeze", []string{b.op("Slice", []string{all, b.i64(-1), b.i64(math.MaxInt64), b.i64(2)}), b.i64(2)})
	y := b.op("Mul", []string{b.op("Sigmoid", []string{gate}), b.op("Transpose", []string{all}, attrInts("perm", 0, 2, 1))})
	o := g.proj(y, p+"recurrent.out_proj", c.Hidden, c.Hidden, false)
	return g.mlp(l, b.op("Add", []string{x, o})), next
}

// mlp adds layer l's SwiGLU feed-forward block with its residual.
func (g *graphBuild) mlp(l int, x string) string {
	c, b := g.c, g.b
	p := layerPrefix(l)
	h := g.rmsNorm(x, p+"post_attention_layernorm.weight")
	gate := g.proj(h, p+"mlp.gate_proj", c.Hidden, c.Intermediate, false)
	up := g.proj(h, p+"mlp.up_proj", c.Hidden, c.Intermediate, false)
	act := b.op("Mul", []string{b.op("Mul", []string{gate, b.op("Sigmoid", []string{gate})}), up})
	down := g.proj(act, p+"mlp.down_proj", c.Intermediate, c.Hidden, false)
	return b.op("Add", []string{x, down})
}

// layer adds decoder layer l and returns the new hidden state and the
// present key and value.
func (g *graphBuild) layer(l int, x, pastK, pastV string) (string, string, string) {
	c, b := g.c, g.b
	p := layerPrefix(l)
	bias := c.ModelType == "qwen2"
	qDim, kvDim := c.Heads*g.hd, c.KVHeads*g.hd

	h := g.rmsNorm(x, p+"input_layernorm.weight")
	q := g.proj(h, p+"self_attn.q_proj", c.Hidden, qDim, bias)
	k := g.proj(h, p+"self_attn.k_proj", c.Hidden, kvDim, bias)
	v := g.proj(h, p+"self_attn.v_proj", c.Hidden, kvDim, bias)

	var attn, presK, presV string
	if c.Attention == AttentionGQA {
		attn, presK, presV = g.gqa(l, q, k, v, pastK, pastV)
	} else {
		attn, presK, presV = g.plainAttention(l, q, k, v, pastK, pastV)
	}
	o := g.proj(attn, p+"self_attn.o_proj", qDim, c.Hidden, false)
	x = b.op("Add", []string{x, o})
	return g.mlp(l, x), presK, presV
}

// plainAttention is grouped-query attention in standard ops over a KV
// cache that grows by concatenation.
func (g *graphBuild) plainAttention(l int, q, k, v, pastK, pastV string) (string, string, string) {
	c, b := g.c, g.b
	hd := int64(g.hd)
	toHeads := func(x string, heads int) string { // [B, S, n*hd] -> [B, n, S, hd]
		r := b.op("Reshape", []string{x, b.i64(0, 0, int64(heads), hd)})
		return b.op("Transpose", []string{r}, attrInts("perm", 0, 2, 1, 3))
	}
	q4 := g.applyRotary(toHeads(q, c.Heads))
	k4 := g.applyRotary(toHeads(k, c.KVHeads))
	v4 := toHeads(v, c.KVHeads)
	if l == 0 && c.Scripted() {
		hi, lo := g.idHalves()
		axes := b.i64(1, 3) // [B, S] -> [B, 1, S, 1]
		v4 = g.markIDs(v4, b.op("Unsqueeze", []string{hi, axes}), b.op("Unsqueeze", []string{lo, axes}), []int64{1, int64(c.KVHeads), 1, hd})
	}
	presK := b.op("Concat", []string{pastK, k4}, attrI("axis", 2)) // [B, KV, T, hd]
	presV := b.op("Concat", []string{pastV, v4}, attrI("axis", 2))

	q5 := b.op("Reshape", []string{q4, b.i64(0, int64(c.KVHeads), int64(g.group), -1, hd)}) // [B, KV, G, S, hd]
	k5 := b.op("Unsqueeze", []string{presK, b.i64(2)})                                      // [B, KV, 1, T, hd]
	kT := b.op("Transpose", []string{k5}, attrInts("perm", 0, 1, 2, 4, 3))
	scores := b.op("MatMul", []string{q5, kT}) // [B, KV, G, S, T]
	scores = b.op("Mul", []string{scores, b.scalarF32(float32(1 / math.Sqrt(float64(g.hd))))})
	scores = b.op("Add", []string{scores, g.maskBias})
	probs := b.op("Softmax", []string{scores}, attrI("axis", -1))
	v5 := b.op("Unsqueeze", []string{presV, b.i64(2)})
	o := b.op("MatMul", []string{probs, v5}) // [B, KV, G, S, hd]
	o = b.op("Reshape", []string{o, b.i64(0, int64(c.Heads), -1, hd)})
	o = b.op("Transpose", []string{o}, attrInts("perm", 0, 2, 1, 3)) // [B, S, H, hd]
	o = b.op("Reshape", []string{o, b.i64(0, 0, int64(c.Heads)*hd)})
	return o, presK, presV
}

// gqa is attention through com.microsoft GroupQueryAttention with the
// rotary embedding applied beforehand (do_rotary = 0) and past/present
// sharing one buffer of Context positions.
func (g *graphBuild) gqa(l int, q, k, v, pastK, pastV string) (string, string, string) {
	c, b := g.c, g.b
	hd := int64(g.hd)
	rot := func(x string, heads int) string { // rotate per head in BSNH
		r := b.op("Reshape", []string{x, b.i64(0, 0, int64(heads), hd)})
		r = g.applyRotary(r)
		return b.op("Reshape", []string{r, b.i64(0, 0, int64(heads)*hd)})
	}
	if !c.RotaryInOp {
		q = rot(q, c.Heads)
		k = rot(k, c.KVHeads)
	}
	if l == 0 && c.Scripted() {
		hi, lo := g.idHalves()
		axes := b.i64(2) // [B, S] -> [B, S, 1]
		v = g.markIDs(v, b.op("Unsqueeze", []string{hi, axes}), b.op("Unsqueeze", []string{lo, axes}), []int64{int64(c.KVHeads) * hd})
	}
	io := c.ioType()
	if io != dtFloat {
		q = b.op("Cast", []string{q}, attrI("to", int64(io)))
		k = b.op("Cast", []string{k}, attrI("to", int64(io)))
		v = b.op("Cast", []string{v}, attrI("to", int64(io)))
	}
	inputs := []string{q, k, v, pastK, pastV, g.seqlensK, g.totalLenI32}
	attrs := []attr{attrI("num_heads", int64(c.Heads)), attrI("kv_num_heads", int64(c.KVHeads))}
	if c.RotaryInOp {
		inputs = append(inputs, g.cos, g.sin)
		attrs = append(attrs, attrI("do_rotary", 1), attrI("rotary_interleaved", 0))
	}
	outs := b.opN("com.microsoft", "GroupQueryAttention", inputs, 3, attrs...)
	o := outs[0]
	if io != dtFloat {
		o = b.op("Cast", []string{o}, attrI("to", dtFloat))
	}
	return o, outs[1], outs[2]
}

// idBase splits a token id over two cache channels, id = hi*idBase + lo,
// so both halves stay exact integers even in a float16 cache.
const idBase = 1024

// markIDs overwrites channels head_size-2 and head_size-1 of KV head 0 in
// the new values with the high and low halves of each position's token id.
// keepShape is the broadcast shape of the masks over v's trailing axes; hi
// and lo are shaped to broadcast against v.
func (g *graphBuild) markIDs(v, hi, lo string, keepShape []int64) string {
	b := g.b
	n := 1
	for _, d := range keepShape {
		n *= int(d)
	}
	keep := make([]float32, n)
	selHi := make([]float32, n)
	selLo := make([]float32, n)
	for i := range keep {
		keep[i] = 1
	}
	// Head 0's channels are the first head_size elements in either shape.
	keep[g.hd-2], keep[g.hd-1] = 0, 0
	selHi[g.hd-2], selLo[g.hd-1] = 1, 1
	kept := b.op("Mul", []string{v, b.f32(keep, keepShape...)})
	kept = b.op("Add", []string{kept, b.op("Mul", []string{b.f32(selHi, keepShape...), hi})})
	return b.op("Add", []string{kept, b.op("Mul", []string{b.f32(selLo, keepShape...), lo})})
}

// idHalves returns the high and low halves of input_ids as float [B, S].
func (g *graphBuild) idHalves() (string, string) {
	b := g.b
	base := b.scalarI64(idBase)
	hi := b.op("Cast", []string{b.op("Div", []string{g.ids, base})}, attrI("to", dtFloat))
	lo := b.op("Cast", []string{b.op("Mod", []string{g.ids, base})}, attrI("to", dtFloat))
	return hi, lo
}

// scriptLogitBias finds how far the script has got at each row of the
// step and returns scriptBias on the logit of the script's next token
// there, as [B, S, V].
//
// The token ids of all positions are read back from layer 0's value cache
// (past) and input_ids (this chunk). The step is the largest k <= len(script)
// such that the last k tokens equal the first k script tokens; if the last
// token is the EOS id, the step is len(script). The next token is
// table[step] with table = script ++ [eos].
func (g *graphBuild) scriptLogitBias(pastV string) string {
	c, b := g.c, g.b
	hd := int64(g.hd)
	pastLen := b.op("Sub", []string{g.totalLen, g.seqLen})
	ch := b.op("Slice", []string{pastV, b.i64(0, hd-2), b.i64(1, hd), b.i64(1, 3)}) // [B, 1, P, 2]
	ch = b.op("Slice", []string{ch, b.i64(0), b.op("Unsqueeze", []string{pastLen, b.i64(0)}), b.i64(2)})
	if c.DType != FP32 && c.Attention == AttentionGQA {
		ch = b.op("Cast", []string{ch}, attrI("to", dtFloat))
	}
	// id = hi*idBase + lo per past position.
	ch = b.op("MatMul", []string{ch, b.f32([]float32{idBase, 1}, 2, 1)}) // [B, 1, past, 1]
	past := b.op("Reshape", []string{ch, b.i64(0, -1)})                  // [B, past]
	cur := b.op("Cast", []string{g.ids}, attrI("to", dtFloat))           // [B, S]
	hist := b.op("Concat", []string{past, cur}, attrI("axis", 1))        // [B, T]
	// Only attended positions are history: a padded past has masked rows.
	keep := b.op("Cast", []string{b.op("Gather", []string{g.mask, b.scalarI64(0)}, attrI("axis", 0))}, attrI("to", dtBool))
	hist = b.op("Compress", []string{hist, keep}, attrI("axis", 1))                    // [B, valid]
	hist = b.op("Pad", []string{hist, b.i64(0, c.scriptPad(), 0, 0), b.scalarF32(-1)}) // [B, pad+T]
	tok := g.scriptNext(hist, c.Script)
	if c.Alt != nil {
		tok = b.op("Where", []string{g.holds(hist, c.Alt.Trigger), g.scriptNext(hist, c.Alt.Script), tok})
	}
	last := b.op("Gather", []string{hist, g.rowIndex(hist, 0)}, attrI("axis", 1)) // [B, S]
	for _, id := range c.StopAfter {
		stop := b.op("Equal", []string{last, b.scalarF32(float32(id))})
		tok = b.op("Where", []string{stop, b.scalarF32(float32(c.ScriptEOS)), tok})
	}
	ids := b.op("Cast", []string{tok}, attrI("to", dtInt64)) // [B, S]
	vocab := b.op("Range", []string{b.scalarI64(0), b.scalarI64(int64(c.Vocab)), b.scalarI64(1)})
	hit := b.op("Equal", []string{b.op("Unsqueeze", []string{ids, b.i64(2)}), vocab}) // [B, S, V]
	return b.op("Where", []string{hit, b.scalarF32(scriptBias), b.scalarF32(0)})
}
