// Package resources decides whether a model fits before it is loaded, and
// reads the machine's memory and GPUs for diagnostics.
//
// It upholds spec P1 (the RAM/VRAM budget before an ONNX load and the
// *InsufficientResourcesError refusal), P3 (the refusal happens before the
// runtime's loader is called: callers run lock → Check → load), P5 (RAM and
// swap readings, the before/after delta of a load, the WSL memory hint is
// in examples/doctor) and P17 (per-device VRAM telemetry and the low-VRAM
// threshold). P12's structured holder travels in the refusal as a
// *lock.Holder.
//
// The pieces are separable so each can be tested alone:
//
//   - ParseMeminfo / ReadMemory read free RAM and swap from /proc/meminfo.
//   - ReadGPUs reads per-device VRAM, utilisation and temperature through the
//     small NVML interface; SystemNVML is the real binding (go-nvml, cgo; this
//     package is its only importer). Without cgo, without the NVIDIA driver
//     or without a GPU it reports "unavailable" with the cause, never a crash.
//   - EstimateModel turns a model folder and a Plan into the bytes it needs.
//   - Decide is the budget itself: a pure function from an estimate,
//     readings and reserves to a Decision, whose Err is the refusal.
//   - Checker wires them together with plain options (it reads no
//     environment; the PRISM_* settings reach it from the edge), and
//     Snapshot/Sub give the before/after delta a load should log.
package resources
