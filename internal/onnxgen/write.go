package onnxgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/prism-local/prism/internal/modelfolder"
)

// Files of the two layouts, relative to the model folder.
const (
	// OptimumModelFile is the graph in the optimum layout.
	OptimumModelFile = "onnx/model.onnx"
	// OptimumDataFile is the external weight file in the optimum layout.
	OptimumDataFile = "onnx/model.onnx_data"
	// MergedModelFile is the merged decoder graph in the optimum layout.
	MergedModelFile = "onnx/decoder_model_merged.onnx"
	// MergedDataFile is the merged decoder's external weight file.
	MergedDataFile = "onnx/decoder_model_merged.onnx_data"
	// GenAIModelFile is the graph in the genai layout.
	GenAIModelFile = "model.onnx"
	// GenAIDataFile is the external weight file in the genai layout.
	GenAIDataFile = "model.onnx.data"
	// stampFile records the Config of a finished Write (see Complete).
	stampFile = ".onnxgen.json"
)

// dataAlign is the alignment of each tensor in the external data file, so a
// runtime may map tensors straight from the file.
const dataAlign = 4096

// ModelFile is the graph's path inside a folder of c's layout.
func (c Config) ModelFile() string {
	if c.Layout == LayoutGenAI {
		return GenAIModelFile
	}
	if c.Merged {
		return MergedModelFile
	}
	return OptimumModelFile
}

// DataFile is the external weight file's path inside a folder of c's layout.
func (c Config) DataFile() string {
	if c.Layout == LayoutGenAI {
		return GenAIDataFile
	}
	if c.Merged {
		return MergedDataFile
	}
	return OptimumDataFile
}

// graphFile is one graph a Write produces: its file, its external data
// file (the first shard), and the configuration it is built from.
type graphFile struct {
	file, data string
	cfg        Config
}

// graphs lists the graphs of a folder of c: one, or one per variant.
func (c Config) graphs() []graphFile {
	if len(c.Variants) == 0 {
		return []graphFile{{c.ModelFile(), c.DataFile(), c}}
	}
	out := make([]graphFile, len(c.Variants))
	for i, v := range c.Variants {
		file := modelfolder.GraphDir + "/" + modelfolder.GraphFileName(modelfolder.FormModel, v)
		out[i] = graphFile{file, file + "_data", c.ForVariant(v)}
	}
	return out
}

// VariantFile is the graph's path inside the folder for dtype variant v of
// an export written with Variants.
func VariantFile(v string) string {
	return modelfolder.GraphDir + "/" + modelfolder.GraphFileName(modelfolder.FormModel, v)
}

// Resolve fills what c leaves to be derived: the vocabulary size and the
// special token ids from TokenizerDir, the EOS list, the script's EOS and
// the pad id. It validates the result.
func (c Config) Resolve() (Config, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	tokEOS := -1
	if c.TokenizerDir != "" {
		info, err := ReadTokenizer(c.TokenizerDir)
		if err != nil {
			return c, err
		}
		if c.Vocab == 0 {
			c.Vocab = info.Vocab
		}
		if c.Vocab < info.Vocab {
			return c, fmt.Errorf("%w: vocab %d is smaller than the tokenizer's %d", ErrInvalidConfig, c.Vocab, info.Vocab)
		}
		tokEOS = info.EOS
		if c.BOS < 0 {
			c.BOS = info.BOS
		}
		if c.PAD < 0 {
			c.PAD = info.PAD
		}
	}
	if c.ScriptEOS < 0 {
		switch {
		case len(c.EOS) > 0:
			c.ScriptEOS = c.EOS[0]
		case tokEOS >= 0:
			c.ScriptEOS = tokEOS
		default:
			c.ScriptEOS = c.Vocab - 1
		}
	}
	if len(c.EOS) == 0 {
		switch {
		case c.Scripted():
			c.EOS = []int{c.ScriptEOS}
		case tokEOS >= 0:
			c.EOS = []int{tokEOS}
		default:
			c.EOS = []int{c.Vocab - 1}
		}
	}
	if c.PAD < 0 {
		c.PAD = c.EOS[0]
	}
	c.EOS = append([]int(nil), c.EOS...)
	c.Script = append([]int32(nil), c.Script...)
	if c.Alt != nil {
		c.Alt = &AltScript{Trigger: slices.Clone(c.Alt.Trigger), Script: slices.Clone(c.Alt.Script)}
	}
	c.StopAfter, c.Prefer = slices.Clone(c.StopAfter), slices.Clone(c.Prefer)
	return c, c.Validate()
}

// Write writes the complete model folder for cfg into dir (created if
// needed): the ONNX graph with its weights in an external data file, the
// layout's config files, and the tokenizer files when cfg.TokenizerDir is
// set. Weights are streamed to disk; memory use does not grow with the
// model size. Files are written under temporary names and renamed into
// place, the stamp that Complete checks last.
func Write(ctx context.Context, dir string, cfg Config) error {
	c, err := cfg.Resolve()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(c.ModelFile())), 0o755); err != nil {
		return fmt.Errorf("onnxgen: %w", err)
	}
	os.Remove(filepath.Join(dir, stampFile))
	for _, g := range c.graphs() {
		b := buildGraph(g.cfg)
		if err := writeData(ctx, filepath.Join(dir, g.data), b, c.DataShard); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, g.file), encodeModel(g.cfg, b)); err != nil {
			return err
		}
	}
	if err := writeConfigs(dir, c); err != nil {
		return err
	}
	if c.TokenizerDir != "" {
		if err := copyTokenizer(c.TokenizerDir, dir); err != nil {
			return err
		}
	}
	if c.Demo {
		note := "Prism's built-in demo model: a tiny generated graph with scripted answers, not a language model.\n"
		if err := writeFile(filepath.Join(dir, modelfolder.DemoMarkerFile), []byte(note)); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, stampFile), stamp(cfg))
}

// Complete reports whether dir holds a finished Write of cfg (the same
// config, all files in place), so a caller can skip writing it again.
func Complete(dir string, cfg Config) bool {
	got, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil || !bytes.Equal(got, stamp(cfg)) {
		return false
	}
	files := []string{modelfolder.ConfigFile, modelfolder.GenerationConfigFile}
	if cfg.Layout == LayoutGenAI {
		files = []string{modelfolder.GenAIConfigFile}
	}
	for _, g := range cfg.graphs() {
		files = append(files, g.file, g.data)
	}
	if cfg.TokenizerDir != "" {
		files = append(files, modelfolder.TokenizerFile, modelfolder.TokenizerConfigFile)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// graphRevision changes whenever the graphs written for the same Config
// change, so that folders written before are rewritten. 2: RMSNorm as
// Pow(x, 2), which the runtime fuses. 3: a scripted model's history leaves
// out the past positions attention_mask masks. 4: scriptBias 1000, room
// for Config.Prefer below it. 5: every row of a step is scripted, not
// only the last (speculative decoding verifies every row).
const graphRevision = 5

// stamp is the Config as JSON with the graph revision. Int4Accuracy is
// dropped for unquantized models, where it changes nothing.
func stamp(cfg Config) []byte {
	if cfg.Quant != QuantInt4 {
		cfg.Int4Accuracy = 0
	}
	b, _ := json.MarshalIndent(struct {
		GraphRevision int `json:"graph_revision"`
		Config
	}{graphRevision, cfg}, "", "  ")
	return append(b, '\n')
}

// encodeModel wraps the graph in a ModelProto.
func encodeModel(c Config, b *builder) []byte {
	opsets := []opsetImport{{domain: "", version: 17}}
	if b.domains["com.microsoft"] {
		opsets = append(opsets, opsetImport{domain: "com.microsoft", version: 1})
	}
	md := &model{
		irVersion:    8,
		opsets:       opsets,
		producer:     "prism-onnxgen",
		producerVer:  "1",
		graphName:    c.ModelType,
		nodes:        b.nodes,
		initializers: b.inits,
		inputs:       b.inputs,
		outputs:      b.outputs,
	}
	return md.encode()
}

// writeData streams every external tensor into path and records its
// location, offset and length on the tensor. With shard > 0 a tensor that
// would take the file past shard bytes starts the next file, path_1,
// path_2, ... (as exports name them).
func writeData(ctx context.Context, path string, b *builder, shard int64) error {
	w, err := newDataFile(path)
	if err != nil {
		return err
	}
	defer func() { w.abort() }()
	pad := make([]byte, dataAlign)
	n := 0
	for _, e := range b.external {
		if err := ctx.Err(); err != nil {
			return err
		}
		if shard > 0 && w.off > 0 && alignUp(w.off)+e.size > shard {
			if err := w.commit(); err != nil {
				return err
			}
			n++
			next, err := newDataFile(fmt.Sprintf("%s_%d", path, n))
			if err != nil {
				return err
			}
			w = next
		}
		if r := w.off % dataAlign; r != 0 {
			if _, err := w.buf.Write(pad[:dataAlign-r]); err != nil {
				return fmt.Errorf("onnxgen: %w", err)
			}
			w.off += dataAlign - r
		}
		cw := &countWriter{w: w.buf}
		bw := bufio.NewWriterSize(cw, 1<<16)
		if err := e.write(bw); err != nil {
			return fmt.Errorf("onnxgen: writing %s: %w", e.t.name, err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("onnxgen: %w", err)
		}
		if cw.n != e.size {
			return fmt.Errorf("onnxgen: tensor %s wrote %d bytes, want %d", e.t.name, cw.n, e.size)
		}
		e.t.location, e.t.offset, e.t.length = filepath.Base(w.path), w.off, e.size
		w.off += e.size
	}
	if err := w.commit(); err != nil {
		return err
	}
	// Shards left by an earlier, larger write would be counted as this
	// graph's data.
	for i := n + 1; ; i++ {
		if err := os.Remove(fmt.Sprintf("%s_%d", path, i)); err != nil {
			break
		}
	}
	return nil
}

func alignUp(off int64) int64 { return (off + dataAlign - 1) / dataAlign * dataAlign }

// dataFile is one external data file being written under a temporary name.
type dataFile struct {
	path string
	f    *os.File
	buf  *bufio.Writer
	off  int64
	done bool
}

func newDataFile(path string) (*dataFile, error) {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return nil, fmt.Errorf("onnxgen: %w", err)
	}
	return &dataFile{path: path, f: f, buf: bufio.NewWriterSize(f, 1<<20)}, nil
}

// commit flushes the file and renames it into place.
func (d *dataFile) commit() error {
	if err := d.buf.Flush(); err != nil {
		return fmt.Errorf("onnxgen: %w", err)
	}
	if err := d.f.Close(); err != nil {
		return fmt.Errorf("onnxgen: %w", err)
	}
	d.done = true
	if err := os.Rename(d.path+".tmp", d.path); err != nil {
		return fmt.Errorf("onnxgen: %w", err)
	}
	return nil
}

// abort removes the temporary file of a write that did not commit.
func (d *dataFile) abort() {
	if !d.done {
		d.f.Close()
		os.Remove(d.path + ".tmp")
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("onnxgen: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("onnxgen: %w", err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("onnxgen: %w", err)
	}
	return writeFile(path, append(data, '\n'))
}

func copyTokenizer(from, to string) error {
	for _, name := range tokenizerFiles {
		data, err := os.ReadFile(filepath.Join(from, name))
		if errors.Is(err, os.ErrNotExist) && name != modelfolder.TokenizerFile && name != modelfolder.TokenizerConfigFile {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrTokenizer, err)
		}
		if err := writeFile(filepath.Join(to, name), data); err != nil {
			return err
		}
	}
	return nil
}

// idOrList is one id as a number, several as a list, as HF configs write it.
func idOrList(ids []int) any {
	if len(ids) == 1 {
		return ids[0]
	}
	return ids
}

func optionalID(id int) any {
	if id < 0 {
		return nil
	}
	return id
}

func writeConfigs(dir string, c Config) error {
	if c.Layout == LayoutGenAI {
		return writeJSON(filepath.Join(dir, modelfolder.GenAIConfigFile), genaiConfig(c))
	}
	arch := "Qwen2ForCausalLM"
	if c.ModelType == "llama" {
		arch = "LlamaForCausalLM"
	}
	dtype := "float32"
	if c.DType == FP16 {
		dtype = "float16"
	}
	conf := map[string]any{
		"architectures":           []string{arch},
		"model_type":              c.ModelType,
		"hidden_act":              "silu",
		"hidden_size":             c.Hidden,
		"intermediate_size":       c.Intermediate,
		"num_attention_heads":     c.Heads,
		"num_key_value_heads":     c.KVHeads,
		"num_hidden_layers":       c.Layers,
		"head_dim":                c.HeadSize(),
		"vocab_size":              c.Vocab,
		"max_position_embeddings": c.Context,
		"rms_norm_eps":            c.RMSNormEps,
		"rope_theta":              c.RopeTheta,
		"tie_word_embeddings":     c.Tied,
		"bos_token_id":            optionalID(c.BOS),
		"eos_token_id":            idOrList(c.EOS),
		"pad_token_id":            optionalID(c.PAD),
		"torch_dtype":             dtype,
		"use_cache":               true,
	}
	if c.ModelType == "llama" {
		conf["attention_bias"] = false
		conf["mlp_bias"] = false
	}
	if len(c.ConvLayers) > 0 && c.StateNames == StatesLFM2 {
		conf["layer_types"] = c.layerTypes()
		conf["conv_L_cache"] = c.convKernel()
	}
	if c.StateNames == StatesKV {
		// Qwen3.5's and Qwen3-Next's config.json: layer_types of
		// linear_attention and full_attention, the convolution's length.
		conf["layer_types"] = c.layerTypes()
		conf["linear_conv_kernel_dim"] = c.convKernel()
	}
	if err := writeJSON(filepath.Join(dir, modelfolder.ConfigFile), conf); err != nil {
		return err
	}
	gen := map[string]any{
		"bos_token_id": optionalID(c.BOS),
		"eos_token_id": idOrList(c.EOS),
		"pad_token_id": optionalID(c.PAD),
		"do_sample":    false,
	}
	if c.Sampling != nil {
		c.Sampling.put(gen)
	}
	return writeJSON(filepath.Join(dir, modelfolder.GenerationConfigFile), gen)
}

// genaiConfig is genai_config.json as the onnxruntime-genai model builder
// writes it.
func genaiConfig(c Config) map[string]any {
	share := c.Attention == AttentionGQA
	inputs := map[string]any{
		"input_ids":        InputIDs,
		"attention_mask":   AttentionMask,
		"position_ids":     PositionIDs,
		"past_key_names":   "past_key_values.%d.key",
		"past_value_names": "past_key_values.%d.value",
	}
	if c.RotaryInOp {
		delete(inputs, "position_ids")
	}
	outputs := map[string]any{
		"logits":              Logits,
		"present_key_names":   "present.%d.key",
		"present_value_names": "present.%d.value",
	}
	decoderExtra := map[string]any{}
	if len(c.ConvLayers) > 0 && c.StateNames == StatesLFM2 {
		decoderExtra["layer_types"] = c.layerTypes()
		decoderExtra["conv_cache_size"] = c.convKernel() - 1
		inputs["past_conv_names"] = "past_conv.%d"
		outputs["present_conv_names"] = "present_conv.%d"
	}
	if c.StateNames == StatesKV && len(c.ConvLayers)+len(c.RecurrentLayers) > 0 {
		// As the model builder writes Qwen3.5's linear-attention states.
		decoderExtra["layer_types"] = c.layerTypes()
		inputs["past_conv_names"] = "past_key_values.%d.conv_state"
		outputs["present_conv_names"] = "present.%d.conv_state"
		inputs["past_recurrent_names"] = "past_key_values.%d.recurrent_state"
		outputs["present_recurrent_names"] = "present.%d.recurrent_state"
	}
	if c.StateNames == StatesPast && len(c.ConvLayers)+len(c.RecurrentLayers) > 0 {
		// As later model builders write them: the names, and the layers
		// of each kind of state in state_groups.
		inputs["past_conv_names"] = "past.%d.conv"
		outputs["present_conv_names"] = "present.%d.conv"
		inputs["past_recurrent_names"] = "past.%d.recurrent"
		outputs["present_recurrent_names"] = "present.%d.recurrent"
		var groups []any
		for _, g := range []struct {
			kind   string
			layers []int
		}{{"fixed_conv", c.ConvLayers}, {"fixed_recurrent", c.RecurrentLayers}} {
			if len(g.layers) > 0 {
				groups = append(groups, map[string]any{"kind": g.kind, "layer_ids": slices.Sorted(slices.Values(g.layers))})
			}
		}
		decoderExtra["state_groups"] = groups
	}
	if c.CombinedPast {
		delete(inputs, "past_key_names")
		delete(inputs, "past_value_names")
		inputs["past_names"] = "past_%d"
		delete(outputs, "present_key_names")
		delete(outputs, "present_value_names")
		outputs["present_names"] = "present_%d"
	}
	search := map[string]any{
		"diversity_penalty":         0.0,
		"do_sample":                 false,
		"early_stopping":            true,
		"length_penalty":            1.0,
		"max_length":                c.Context,
		"min_length":                0,
		"no_repeat_ngram_size":      0,
		"num_beams":                 1,
		"num_return_sequences":      1,
		"past_present_share_buffer": share,
		"repetition_penalty":        1.0,
		"temperature":               1.0,
		"top_k":                     1,
		"top_p":                     1.0,
	}
	if c.Sampling != nil {
		c.Sampling.put(search)
	}
	decoder := map[string]any{
		"session_options": map[string]any{
			"log_id":           "onnxruntime-genai",
			"provider_options": []any{},
		},
		"filename":            GenAIModelFile,
		"head_size":           c.HeadSize(),
		"hidden_size":         c.Hidden,
		"num_attention_heads": c.Heads,
		"num_hidden_layers":   c.Layers,
		"num_key_value_heads": c.KVHeads,
		"inputs":              inputs,
		"outputs":             outputs,
	}
	maps.Copy(decoder, decoderExtra)
	return map[string]any{
		"model": map[string]any{
			"bos_token_id":   optionalID(c.BOS),
			"context_length": c.Context,
			"decoder":        decoder,
			"eos_token_id":   idOrList(c.EOS),
			"pad_token_id":   optionalID(c.PAD),
			"type":           c.ModelType,
			"vocab_size":     c.Vocab,
		},
		"search": search,
	}
}
