// Command mkmodel writes a model folder with internal/onnxgen: a random or
// scripted llama/qwen2 model in the HF optimum or onnxruntime-genai layout,
// optionally with a real tokenizer folder. `make serve` runs it with -demo.
// docs/models.md describes the layouts and every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/onnxgen"
)

// The built-in demo model's answers. It chooses by what its Qwen3 chat
// template put in the prompt: offered tools, it calls one; otherwise it
// reasons and then answers. Under a grammar (tool_choice, response_format)
// whatever the grammar masks of the script is replaced by the first of
// demoPrefer the grammar allows, so its JSON and calls are short and valid.
const (
	demoScript = "<think>\nThe user wrote to me. I am the demo model, so I think this scripted thought and then answer.\n</think>\n\n" +
		"Hello! I am Prism's built-in demo model: a tiny generated ONNX graph running in ONNX Runtime, " +
		"with scripted answers. Offer me tools and I call one; ask for JSON and I write valid JSON. " +
		"To chat for real, serve a real model: go run ./examples/serve -pull -model onnx-community/Qwen3-0.6B-ONNX"
	// demoToolTrigger is text of the Qwen3 template's tools preamble.
	demoToolTrigger = " function signatures within"
	demoToolScript  = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	// demoStopAfter ends the answer after a call.
	demoStopAfter = "</tool_call>"
)

// demoPrefer is what the demo model writes where a grammar masks its
// script, most preferred first: close a call, end, close a string (or
// open one), close an object or array, go on to the next member, then the
// shortest values.
var demoPrefer = []string{demoStopAfter, "<|im_end|>", "\"", "}", "]", ",", ":", "0", "1", "true", "{", "["}

// demoConfig fills in the demo model's scripts with tok's ids.
func demoConfig(cfg *onnxgen.Config, tok *tokenizer.Tokenizer) error {
	encode := func(s string) ([]int32, error) {
		ids := tok.Encode(s)
		if len(ids) == 0 {
			return nil, fmt.Errorf("demo model: %q has no tokens", s)
		}
		return ids, nil
	}
	var err error
	if cfg.Script, err = encode(demoScript); err != nil {
		return err
	}
	alt := &onnxgen.AltScript{}
	if alt.Trigger, err = encode(demoToolTrigger); err != nil {
		return err
	}
	if alt.Script, err = encode(demoToolScript); err != nil {
		return err
	}
	if cfg.StopAfter, err = encode(demoStopAfter); err != nil || len(cfg.StopAfter) != 1 {
		return fmt.Errorf("demo model: %s is not one token (%v)", demoStopAfter, err)
	}
	for _, p := range demoPrefer {
		ids, err := encode(p)
		if err != nil || len(ids) != 1 {
			return fmt.Errorf("demo model: %q is not one token (%v)", p, err)
		}
		cfg.Prefer = append(cfg.Prefer, ids[0])
	}
	cfg.Alt, cfg.Demo = alt, true
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkmodel:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := onnxgen.Tiny()
	fs := flag.NewFlagSet("mkmodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "model folder to write (required)")
	demo := fs.Bool("demo", false, "write the built-in demo model (scripted, real qwen3 tokenizer); does nothing if -out already holds it")
	layout := fs.String("layout", string(def.Layout), "folder layout: optimum or genai")
	attention := fs.String("attention", string(def.Attention), "attention: plain, or gqa (com.microsoft GroupQueryAttention with a shared past/present buffer; genai layout)")
	rotaryInOp := fs.Bool("rotary-in-op", false, "with -attention gqa: GroupQueryAttention applies the rotary embedding itself (do_rotary) and the graph has no position_ids input")
	convLayers := fs.String("conv-layers", "", "comma-separated layers that are short-convolution layers with a state past_conv.N / present_conv.N, as LFM2 has them (a hybrid decoder; plain attention)")
	recurrentLayers := fs.String("recurrent-layers", "", "comma-separated layers that are linear recurrent layers with a state past_recurrent.N / present_recurrent.N, standing for linear-attention layers (a hybrid decoder; plain attention)")
	stateNames := fs.String("state-names", string(onnxgen.StatesLFM2), "names of the -conv-layers and -recurrent-layers states: empty for past_conv.N / past_recurrent.N (LFM2), kv for past_key_values.N.conv_state / past_key_values.N.recurrent_state → present.N.* (Qwen3.5 as onnxruntime-genai's model builder writes it), past for past.N.conv / past.N.recurrent → present.N.* named in genai_config.json with state_groups (later model builders; -layout genai)")
	convKernel := fs.Int("conv-kernel", 0, "the convolution's length with -conv-layers (0: 3)")
	combinedPast := fs.Bool("combined-past", false, "one cache input past_N and output present_N per layer, [2, batch, kv_heads, past, head_dim], as GPT-2 exports had it (genai: past_names, present_names)")
	staticCache := fs.Bool("static-cache", false, "declare the KV cache inputs (with -attention gqa the outputs too) with a fixed length of -context positions, as static-shape builds declare a shared buffer; a growing past is refused by the runtime")
	mask := fs.String("mask", string(onnxgen.MaskCache), "causal mask of plain attention: cache (over cache indices, as transformers exports), positions (over position_ids) or square (an [S, S] triangle expanded to the total length, which refuses a multi-token step on a past)")
	merged := fs.Bool("merged", false, "with -layout optimum: write the merged decoder onnx/decoder_model_merged.onnx with a use_cache_branch input")
	keep := fs.Bool("logits-to-keep", false, "add the logits_to_keep input (int64 scalar: logits only for the last that many positions)")
	dtype := fs.String("dtype", string(def.DType), "KV cache and logits type: fp32 or fp16")
	quant := fs.String("quant", string(def.Quant), "linear weights: none, or int4 (MatMulNBits, block 32)")
	int4Acc := fs.Int("int4-accuracy", def.Int4Accuracy, "with -quant int4: MatMulNBits accuracy_level, 0 (unset: float32 compute) to 4 (int8 compute, as CPU onnxruntime-genai builds ship)")
	modelType := fs.String("model-type", def.ModelType, "qwen2 (q/k/v biases) or llama")
	layers := fs.Int("layers", def.Layers, "decoder layers")
	hidden := fs.Int("hidden", def.Hidden, "hidden size")
	heads := fs.Int("heads", def.Heads, "attention heads")
	kvHeads := fs.Int("kv-heads", def.KVHeads, "key/value heads")
	inter := fs.Int("intermediate", def.Intermediate, "MLP intermediate size")
	vocab := fs.Int("vocab", 0, "vocabulary size (default: sized to -tokenizer, else 256)")
	context_ := fs.Int("context", def.Context, "max_position_embeddings / context_length (and the GQA buffer length)")
	seed := fs.Uint64("seed", def.Seed, "seed of the random weights")
	tied := fs.Bool("tied", def.Tied, "tie lm_head to the token embedding")
	ropeTheta := fs.Float64("rope-theta", def.RopeTheta, "rotary embedding base")
	tokDir := fs.String("tokenizer", "", "HF tokenizer folder to copy in (tokenizer.json, tokenizer_config.json, ...); sizes the vocabulary")
	script := fs.String("script", "", "make a scripted model that emits this text, then EOS (needs -tokenizer)")
	scriptIDs := fs.String("script-ids", "", "make a scripted model that emits these comma-separated token ids, then EOS")
	scriptEOS := fs.Int("script-eos", -1, "token id emitted after the script (default: the first -eos, else the tokenizer's eos_token, else vocab-1)")
	eos := fs.String("eos", "", "comma-separated eos_token_id values for the configs (default: the script EOS or the tokenizer's eos_token)")
	bos := fs.Int("bos", -1, "bos_token_id (default: the tokenizer's bos_token, else none)")
	variants := fs.String("variants", "", "comma-separated dtype variants to write as an onnx-community export (optimum layout): fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4 (onnx/model.onnx, onnx/model_fp16.onnx, ...)")
	shard := fs.Int64("data-shard-bytes", 0, "split each external data file at this many bytes (model.onnx_data, model.onnx_data_1, ...); 0 keeps one file")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return errors.New("-out DIR is required")
	}

	cfg := def
	if *demo {
		if err := demoAlone(fs); err != nil {
			return err
		}
		dir, err := fixtures.FetchTokenizer(ctx, "qwen3")
		if err != nil {
			return fmt.Errorf("fetching the qwen3 tokenizer for the demo model: %w", err)
		}
		cfg.TokenizerDir = dir
		cfg.Vocab = 0
		cfg.Context = 8192
		tok, err := tokenizer.Load(dir)
		if err != nil {
			return fmt.Errorf("the demo model's tokenizer: %w", err)
		}
		if err := demoConfig(&cfg, tok); err != nil {
			return err
		}
	} else {
		cfg.Layout = onnxgen.Layout(*layout)
		cfg.Attention = onnxgen.Attention(*attention)
		cfg.RotaryInOp = *rotaryInOp
		cfg.StaticCache = *staticCache
		cfg.CombinedPast = *combinedPast
		cfg.DType = onnxgen.DType(*dtype)
		cfg.Merged = *merged
		cfg.LogitsToKeep = *keep
		if *mask != string(onnxgen.MaskCache) {
			cfg.Mask = onnxgen.Mask(*mask)
		}
		cfg.Quant = onnxgen.Quant(*quant)
		cfg.Int4Accuracy = *int4Acc
		cfg.ModelType = *modelType
		cfg.Layers, cfg.Hidden, cfg.Heads, cfg.KVHeads = *layers, *hidden, *heads, *kvHeads
		cfg.Intermediate, cfg.Context, cfg.Seed, cfg.Tied = *inter, *context_, *seed, *tied
		cfg.RopeTheta = *ropeTheta
		cfg.TokenizerDir = *tokDir
		cfg.BOS = *bos
		cfg.ScriptEOS = *scriptEOS
		cfg.Vocab = *vocab
		cfg.DataShard = *shard
		if *variants != "" {
			for _, v := range strings.Split(*variants, ",") {
				cfg.Variants = append(cfg.Variants, strings.TrimSpace(v))
			}
		}
		if cfg.Vocab == 0 && cfg.TokenizerDir == "" {
			cfg.Vocab = def.Vocab
		}
		ids, err := parseIDs(*eos)
		if err != nil {
			return fmt.Errorf("-eos: %w", err)
		}
		for _, id := range ids {
			cfg.EOS = append(cfg.EOS, int(id))
		}
		conv, err := parseIDs(*convLayers)
		if err != nil {
			return fmt.Errorf("-conv-layers: %w", err)
		}
		for _, l := range conv {
			cfg.ConvLayers = append(cfg.ConvLayers, int(l))
		}
		cfg.ConvKernel = *convKernel
		cfg.StateNames = onnxgen.StateNames(*stateNames)
		rec, err := parseIDs(*recurrentLayers)
		if err != nil {
			return fmt.Errorf("-recurrent-layers: %w", err)
		}
		for _, l := range rec {
			cfg.RecurrentLayers = append(cfg.RecurrentLayers, int(l))
		}
		if *scriptIDs != "" {
			if *script != "" {
				return errors.New("give -script or -script-ids, not both")
			}
			if cfg.Script, err = parseIDs(*scriptIDs); err != nil {
				return fmt.Errorf("-script-ids: %w", err)
			}
		}
	}
	if *script != "" {
		if cfg.TokenizerDir == "" {
			return errors.New("-script needs -tokenizer DIR (or give -script-ids)")
		}
		tok, err := tokenizer.Load(cfg.TokenizerDir)
		if err != nil {
			return fmt.Errorf("-script: %w", err)
		}
		if cfg.Script = tok.Encode(*script); len(cfg.Script) == 0 {
			return errors.New("-script: the text has no tokens")
		}
	}

	if onnxgen.Complete(*out, cfg) {
		if !*quiet {
			fmt.Fprintf(stdout, "%s is up to date\n", *out)
		}
		return nil
	}
	start := time.Now()
	if err := onnxgen.Write(ctx, *out, cfg); err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stdout, "wrote %s (%s layout) in %s\n", *out, cfg.Layout, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// demoAlone refuses flags that shape a model beside -demo: the demo model
// is one fixed configuration, and a flag it would ignore must not look as
// if it had been applied.
func demoAlone(fs *flag.FlagSet) error {
	var extra []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "demo", "out", "q":
		default:
			extra = append(extra, "-"+f.Name)
		}
	})
	if len(extra) > 0 {
		return fmt.Errorf("-demo writes one fixed model and takes only -out and -q, not %s", strings.Join(extra, " "))
	}
	return nil
}

// parseIDs reads comma-separated token ids.
func parseIDs(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, err
		}
		if v < 0 {
			return nil, fmt.Errorf("negative token id %d", v)
		}
		ids = append(ids, int32(v))
	}
	return ids, nil
}
