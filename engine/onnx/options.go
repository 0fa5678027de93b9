package onnx

import (
	"fmt"
	"log/slog"

	"github.com/prism-local/prism/internal/modelfolder"
)

// Devices a caller may ask for.
const (
	// DeviceAuto tries CUDA and runs on the CPU when CUDA cannot be used,
	// logging a warning with the cause and keeping it in ModelInfo.FallbackReason.
	DeviceAuto = "auto"
	// DeviceCPU runs on the CPU execution provider.
	DeviceCPU = "cpu"
	// DeviceCUDA runs on the CUDA execution provider or fails naming why not.
	DeviceCUDA = "cuda"
)

// KV cache strategies, as the load log and ModelInfo.KVCache name them
// (docs/onnx.md describes each).
const (
	// KVSharedBuffer binds one buffer per layer and key/value as both past
	// and present.
	KVSharedBuffer = "shared-buffer"
	// KVPadded hands present over to past with the past at a padded length.
	KVPadded = "present-to-past-padded"
	// KVExact hands present over to past at exact lengths.
	KVExact = "present-to-past"
)

// Options configure Open. The zero value loads on DeviceAuto with the
// runtime's own thread choice and the library found by internal/ortlib.
type Options struct {
	// ID names the model in ModelInfo (defaults to the folder path).
	ID string
	// Device is DeviceAuto (default), DeviceCPU or DeviceCUDA.
	Device string
	// Threads sets the intra-op thread count; 0 keeps the
	// model folder's session_options or the runtime's default.
	Threads int
	// ORTLibrary is the path of libonnxruntime; "" means the library in the
	// default cache.
	ORTLibrary string
	// Logger receives load and fallback messages; nil means slog.Default().
	Logger *slog.Logger
	// SessionConfig holds ONNX Runtime session configuration entries (the
	// keys of onnxruntime_session_options_config_keys.h, such as
	// "session.disable_prepacking"). They are applied after Prism's own
	// choices, so an entry here overrides them.
	SessionConfig map[string]string
	// Variant names the dtype variant of a Hugging Face export to load
	// ("fp32", "fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4", as
	// transformers.js names them; PRISM_VARIANT). "" picks by the rule in
	// docs/onnx.md; a variant the folder lacks is a *VariantError.
	Variant string
	// VariantPicked, when Variant was picked on the user's behalf rather
	// than named by them, says by what rule, for the load log: prism.Open
	// sets it when it applies the device rule itself ("for cpu by the
	// device rule"). "" means the user named Variant (an option or
	// PRISM_VARIANT), or named none and Open picks by the same rule.
	VariantPicked string
	// ExactHandover runs the model on the exact present → past hand-over
	// whatever the graph would allow, skipping the shared buffer and the
	// padded past and their proofs at load.
	ExactHandover bool
	// StrictCUDA makes the CUDA session fail instead of letting ONNX Runtime
	// run on its CPU provider the nodes the CUDA provider does not take
	// (session config "session.disable_cpu_ep_fallback" = "1", set on the
	// CUDA session only). Without it a "cuda" load may run part of the graph
	// on the CPU, and the runtime does not tell Prism how much (docs/devices.md).
	StrictCUDA bool
	// MaxBatch is how many sequences one batched decode step may take
	// (engine.Batcher; PRISM_MAX_BATCH through prism.Open). 0 and 1 mean
	// no batching. Above 1, a proof at load decides whether the graph
	// decodes sequences of different lengths together exactly as alone;
	// ModelInfo.Batch and BatchReason report what it found
	// (docs/onnx.md, "Batched decoding").
	MaxBatch int
}

func (o Options) validate() error {
	switch o.Device {
	case "", DeviceAuto, DeviceCPU, DeviceCUDA:
	default:
		return fmt.Errorf("unknown device %q: want auto, cpu or cuda", o.Device)
	}
	if o.Variant != "" && !modelfolder.KnownVariant(o.Variant) {
		return &VariantError{Want: o.Variant}
	}
	if o.VariantPicked != "" && o.Variant == "" {
		return fmt.Errorf("VariantPicked %q says how a variant was picked, but Variant names none", o.VariantPicked)
	}
	if o.MaxBatch < 0 {
		return fmt.Errorf("max batch must be 0 or 1 (no batching) or above, have %d", o.MaxBatch)
	}
	if o.Threads < 0 {
		return fmt.Errorf("threads must be 0 (runtime default) or positive, have %d", o.Threads)
	}
	return nil
}

func (o Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

func (o Options) device() string {
	if o.Device == "" {
		return DeviceAuto
	}
	return o.Device
}
