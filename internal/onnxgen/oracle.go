package onnxgen

import (
	"math"
	"slices"
)

// Oracle is a pure-Go forward pass over the same weights Write puts into
// the ONNX graph, with its own KV cache. Tests use it to prove the ONNX path
// right: logits from ONNX Runtime must match Forward's.
//
// An Oracle is not safe for concurrent use.
type Oracle struct {
	c      Config
	hd     int
	embed  []float32 // [vocab, hidden]
	layers []oracleLayer
	norm   []float32
	lmHead []float32 // [hidden, vocab]
	inv    []float32

	// KV cache: per layer, per position, kvHeads*headSize values.
	keys, values [][][]float32
}

type oracleLayer struct {
	// conv marks a convolution layer (Config.ConvLayers): inProj [hidden,
	// 3·hidden], convW [hidden, kernel], outProj [hidden, hidden]; its
	// "keys" are the gated inputs b·u by position.
	conv                   bool
	inProj, convW, outProj []float32
	// recurrent marks a recurrent layer (Config.RecurrentLayers): inProj
	// [hidden, 2·hidden], loga the log decay per channel, outProj; its
	// "keys" are h by position.
	recurrent        bool
	loga             []float32
	inNorm, postNorm []float32
	q, k, v, o       []float32 // [in, out]
	qb, kb, vb       []float32 // nil for llama
	gate, up, down   []float32
}

// NewOracle rebuilds the weights of cfg from its seed. It resolves cfg as
// Write does (reading TokenizerDir for the vocabulary size), so the oracle
// and a folder written from the same cfg agree.
func NewOracle(cfg Config) (*Oracle, error) {
	c, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	o := &Oracle{c: c, hd: c.HeadSize(), inv: c.invFreq()}
	o.embed = c.embedWeight().matrix(c.Vocab * c.Hidden)
	mat := func(name string, src source, in, out int) []float32 {
		if c.Quant == QuantInt4 {
			return dequantized(src, in, out)
		}
		m := make([]float32, in*out)
		for i := range m {
			m[i] = src.at(i)
		}
		return m
	}
	proj := func(name string, in, out int) []float32 {
		return mat(name, c.projWeight(name+".weight", in), in, out)
	}
	qDim, kvDim := c.Heads*o.hd, c.KVHeads*o.hd
	for l := 0; l < c.Layers; l++ {
		p := layerPrefix(l)
		L := oracleLayer{
			inNorm:   c.normWeight(p + "input_layernorm.weight").matrix(c.Hidden),
			postNorm: c.normWeight(p + "post_attention_layernorm.weight").matrix(c.Hidden),
			q:        proj(p+"self_attn.q_proj", c.Hidden, qDim),
			k:        proj(p+"self_attn.k_proj", c.Hidden, kvDim),
			v:        proj(p+"self_attn.v_proj", c.Hidden, kvDim),
			o:        proj(p+"self_attn.o_proj", qDim, c.Hidden),
			gate:     proj(p+"mlp.gate_proj", c.Hidden, c.Intermediate),
			up:       proj(p+"mlp.up_proj", c.Hidden, c.Intermediate),
			down:     proj(p+"mlp.down_proj", c.Intermediate, c.Hidden),
		}
		if c.IsRecurrent(l) {
			L = oracleLayer{
				recurrent: true,
				inNorm:    L.inNorm,
				postNorm:  L.postNorm,
				inProj:    proj(p+"recurrent.in_proj", c.Hidden, 2*c.Hidden),
				loga:      c.recurrentLogDecay(l),
				outProj:   proj(p+"recurrent.out_proj", c.Hidden, c.Hidden),
				gate:      L.gate, up: L.up, down: L.down,
			}
			o.layers = append(o.layers, L)
			continue
		}
		if c.IsConv(l) {
			L = oracleLayer{
				conv:     true,
				inNorm:   L.inNorm,
				postNorm: L.postNorm,
				inProj:   proj(p+"conv.in_proj", c.Hidden, 3*c.Hidden),
				convW:    c.convWeight(p + "conv.conv.weight").matrix(c.Hidden * c.convKernel()),
				outProj:  proj(p+"conv.out_proj", c.Hidden, c.Hidden),
				gate:     L.gate, up: L.up, down: L.down,
			}
			o.layers = append(o.layers, L)
			continue
		}
		if c.ModelType == "qwen2" {
			L.qb = c.biasWeight(p + "self_attn.q_proj.bias").matrix(qDim)
			L.kb = c.biasWeight(p + "self_attn.k_proj.bias").matrix(kvDim)
			L.vb = c.biasWeight(p + "self_attn.v_proj.bias").matrix(kvDim)
		}
		o.layers = append(o.layers, L)
	}
	o.norm = c.normWeight("model.norm.weight").matrix(c.Hidden)
	o.lmHead = mat("lm_head.weight", c.lmHead(), c.Hidden, c.Vocab)
	o.keys = make([][][]float32, c.Layers)
	o.values = make([][][]float32, c.Layers)
	return o, nil
}

// Config is the resolved configuration the oracle computes.
func (o *Oracle) Config() Config { return o.c }

// Forward runs ids as one chunk at positions pos, pos+1, ... and returns the
// logits of the last position. The KV cache keeps positions < pos from
// earlier calls and drops the rest; pos must not exceed the cached length.
// A chunk of more than one token counts as prompt for a scripted model,
// exactly as in the graph.
func (o *Oracle) Forward(ids []int32, pos int) []float32 {
	c := o.c
	if pos > len(o.keys[0]) {
		pos = len(o.keys[0])
	}
	for l := range o.keys {
		o.keys[l] = o.keys[l][:pos]
		if len(o.values[l]) > pos {
			o.values[l] = o.values[l][:pos]
		}
	}
	hs := make([][]float32, len(ids))
	for i, id := range ids {
		hs[i] = append([]float32(nil), o.embed[int(id)*c.Hidden:(int(id)+1)*c.Hidden]...)
	}
	for l := range o.layers {
		o.layer(l, hs, ids, pos)
	}
	x := rmsNorm(hs[len(hs)-1], o.norm, float32(c.RMSNormEps))
	logits := matVec(x, o.lmHead, c.Vocab)
	if c.Scripted() {
		logits[c.scriptToken(o.history())] += scriptBias
		if len(c.Prefer) > 0 {
			for id, v := range c.preferBias() {
				logits[id] += v
			}
		}
	}
	if c.DType == FP16 {
		for i, v := range logits {
			logits[i] = float16to32(float16bits(v))
		}
	}
	return logits
}

// Greedy decodes up to n tokens after prompt by argmax, stopping after the
// first token in eos (which is included in the result). It starts from an
// empty cache.
func (o *Oracle) Greedy(prompt []int32, n int, eos []int32) []int32 {
	return greedy(o.Forward, prompt, n, eos)
}

// greedy is the plain greedy loop over any forward step (the oracle's, or
// ONNX Runtime's in the tests): prompt as one chunk, then one token per
// step, at most n tokens, ending after the first token in eos.
func greedy(forward func(ids []int32, pos int) []float32, prompt []int32, n int, eos []int32) []int32 {
	var out []int32
	logits := forward(prompt, 0)
	pos := len(prompt)
	for len(out) < n {
		tok := int32(argmax(logits))
		out = append(out, tok)
		if slices.Contains(eos, tok) {
			return out
		}
		logits = forward([]int32{tok}, pos)
		pos++
	}
	return out
}

// history reads the token ids of every position back from layer 0's value
// cache, as the graph does.
func (o *Oracle) history() []int32 {
	hist := make([]int32, len(o.values[0]))
	for p, v := range o.values[0] {
		hist[p] = int32(v[o.hd-2])*idBase + int32(v[o.hd-1])
	}
	return hist
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// convLayer runs convolution layer l over the chunk's hidden states in
// place: its history is the gated input b·u of every position, of which
// the convolution reads the last kernel values (zeros before position 0).
func (o *Oracle) convLayer(l int, hs [][]float32) {
	c, L := o.c, &o.layers[l]
	H, K := c.Hidden, c.convKernel()
	eps := float32(c.RMSNormEps)
	for _, x := range hs {
		bcu := matVec(rmsNorm(x, L.inNorm, eps), L.inProj, 3*H)
		bu := make([]float32, H)
		for d := range bu {
			bu[d] = bcu[d] * bcu[2*H+d]
		}
		o.keys[l] = append(o.keys[l], bu)
		t := len(o.keys[l]) - 1
		y := make([]float32, H)
		for d := range y {
			var acc float32
			for k := range K {
				if j := t - (K - 1) + k; j >= 0 {
					acc += L.convW[d*K+k] * o.keys[l][j][d]
				}
			}
			y[d] = bcu[H+d] * acc
		}
		out := matVec(y, L.outProj, H)
		for d := range x {
			x[d] += out[d]
		}
		o.mlp(L, x)
	}
}

// recurrentLayer runs recurrent layer l over the chunk's hidden states in
// place, one position after the other: h_t = a ⊙ h_(t-1) + u_t.
func (o *Oracle) recurrentLayer(l int, hs [][]float32) {
	c, L := o.c, &o.layers[l]
	H := c.Hidden
	for _, x := range hs {
		ug := matVec(rmsNorm(x, L.inNorm, float32(c.RMSNormEps)), L.inProj, 2*H)
		h := make([]float32, H)
		prev := make([]float32, H)
		if n := len(o.keys[l]); n > 0 {
			prev = o.keys[l][n-1]
		}
		y := make([]float32, H)
		for d := range h {
			h[d] = float32(math.Exp(float64(L.loga[d])))*prev[d] + ug[d]
			y[d] = h[d] / (1 + float32(math.Exp(-float64(ug[H+d]))))
		}
		o.keys[l] = append(o.keys[l], h)
		out := matVec(y, L.outProj, H)
		for d := range x {
			x[d] += out[d]
		}
		o.mlp(L, x)
	}
}

// mlp adds layer L's feed-forward block to x in place.
func (o *Oracle) mlp(L *oracleLayer, x []float32) {
	c := o.c
	h := rmsNorm(x, L.postNorm, float32(c.RMSNormEps))
	g := matVec(h, L.gate, c.Intermediate)
	u := matVec(h, L.up, c.Intermediate)
	for d := range g {
		g[d] = g[d] / (1 + float32(math.Exp(-float64(g[d])))) * u[d]
	}
	down := matVec(g, L.down, c.Hidden)
	for d := range x {
		x[d] += down[d]
	}
}

// layer runs decoder layer l over the chunk's hidden states in place.
func (o *Oracle) layer(l int, hs [][]float32, ids []int32, pos int) {
	c, L := o.c, &o.layers[l]
	if L.conv || L.recurrent {
		if L.conv {
			o.convLayer(l, hs)
		} else {
			o.recurrentLayer(l, hs)
		}
		if c.DType == FP16 {
			for j := pos; j < len(o.keys[l]); j++ {
				roundHalf(o.keys[l][j]) // the state round-trips through float16
			}
		}
		return
	}
	hd, group := o.hd, c.Heads/c.KVHeads
	qDim, kvDim := c.Heads*hd, c.KVHeads*hd
	eps := float32(c.RMSNormEps)
	qs := make([][]float32, len(hs))
	for i, x := range hs {
		h := rmsNorm(x, L.inNorm, eps)
		q := addBias(matVec(h, L.q, qDim), L.qb)
		k := addBias(matVec(h, L.k, kvDim), L.kb)
		v := addBias(matVec(h, L.v, kvDim), L.vb)
		p := pos + i
		for hh := 0; hh < c.Heads; hh++ {
			o.rotate(q[hh*hd:(hh+1)*hd], p)
		}
		for hh := 0; hh < c.KVHeads; hh++ {
			o.rotate(k[hh*hd:(hh+1)*hd], p)
		}
		if l == 0 && c.Scripted() {
			v[hd-2] = float32(ids[i] / idBase)
			v[hd-1] = float32(ids[i] % idBase)
		}
		qs[i] = q
		o.keys[l] = append(o.keys[l], k)
		o.values[l] = append(o.values[l], v)
	}
	scale := 1 / math.Sqrt(float64(hd))
	for i, x := range hs {
		// Causal: keys 0..pos+i. The oracle's cache holds no padding, so a
		// key's cache index is its position, and this is the rule of both
		// Mask forms (cache indices and position_ids).
		total := pos + i + 1
		attn := make([]float32, qDim)
		scores := make([]float64, total)
		for hh := 0; hh < c.Heads; hh++ {
			kvh := hh / group
			q := qs[i][hh*hd : (hh+1)*hd]
			maxS := math.Inf(-1)
			for j := 0; j < total; j++ {
				k := o.keys[l][j][kvh*hd : (kvh+1)*hd]
				var s float64
				for d := range q {
					s += float64(q[d]) * float64(k[d])
				}
				scores[j] = s * scale
				maxS = math.Max(maxS, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - maxS)
				sum += scores[j]
			}
			out := attn[hh*hd : (hh+1)*hd]
			for d := range out {
				var acc float64
				for j := 0; j < total; j++ {
					acc += scores[j] * float64(o.values[l][j][kvh*hd+d])
				}
				out[d] = float32(acc / sum)
			}
		}
		att := matVec(attn, L.o, c.Hidden)
		for d := range x {
			x[d] += att[d]
		}
		o.mlp(L, x)
	}
	if c.DType == FP16 {
		// The cache round-trips through float16 between calls.
		for j := pos; j < len(o.keys[l]); j++ {
			roundHalf(o.keys[l][j])
			roundHalf(o.values[l][j])
		}
	}
}

func roundHalf(v []float32) {
	for i, x := range v {
		v[i] = float16to32(float16bits(x))
	}
}

// rotate applies the rotate-half rotary embedding for position p.
func (o *Oracle) rotate(x []float32, p int) {
	half := len(x) / 2
	for i := 0; i < half; i++ {
		ang := float32(p) * o.inv[i]
		cos, sin := float32(math.Cos(float64(ang))), float32(math.Sin(float64(ang)))
		a, b := x[i], x[i+half]
		x[i] = a*cos - b*sin
		x[i+half] = b*cos + a*sin
	}
}

func rmsNorm(x, w []float32, eps float32) []float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	r := float32(math.Sqrt(ss/float64(len(x)) + float64(eps)))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v / r * w[i]
	}
	return out
}

// matVec is x @ W for W row-major [len(x), out].
func matVec(x, w []float32, out int) []float32 {
	acc := make([]float64, out)
	for i, xv := range x {
		row := w[i*out : (i+1)*out]
		a := float64(xv)
		for j, wv := range row {
			acc[j] += a * float64(wv)
		}
	}
	y := make([]float32, out)
	for j, v := range acc {
		y[j] = float32(v)
	}
	return y
}

func addBias(y, b []float32) []float32 {
	for i := range b {
		y[i] += b[i]
	}
	return y
}
