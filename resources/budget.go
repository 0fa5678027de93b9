package resources

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/lock"
)

// Default reserves (spec P1): memory left free for everything else.
const (
	DefaultVRAMReserveMB = 1536
	DefaultRAMReserveMB  = 2048
)

// Reserves is memory the budget keeps free, in bytes.
type Reserves struct {
	// RAM is kept free in host memory (PRISM_RAM_RESERVE_MB).
	RAM uint64
	// VRAM is kept free on the GPU (PRISM_VRAM_RESERVE_MB).
	VRAM uint64
}

// DefaultReserves are PRISM_RAM_RESERVE_MB and PRISM_VRAM_RESERVE_MB's
// defaults.
func DefaultReserves() Reserves {
	return Reserves{RAM: DefaultRAMReserveMB * MiB, VRAM: DefaultVRAMReserveMB * MiB}
}

// Readings are the free-memory measurements a decision is made on.
type Readings struct {
	// Memory is host memory.
	Memory Memory
	// MemoryErr says why host memory could not be read; nil when it was.
	MemoryErr error
	// GPUs is the GPU telemetry (only consulted for CUDA devices).
	GPUs GPUStatus
}

// Resource names used in checks and errors.
const (
	RAM  = "ram"
	VRAM = "vram"
)

// Check is one comparison of free memory with need plus reserve.
type Check struct {
	// Resource is RAM or VRAM.
	Resource string
	// Device is "host" for RAM, else "cuda:N (name)".
	Device string
	// Free is the free memory measured.
	Free uint64
	// Need is what the model needs there.
	Need uint64
	// Reserve is what must stay free on top of Need.
	Reserve uint64
}

// Required is Need + Reserve.
func (c Check) Required() uint64 { return satAdd(c.Need, c.Reserve) }

// OK reports whether Free covers Need plus Reserve.
func (c Check) OK() bool { return c.Free >= c.Required() }

// Decision is the outcome of the budget.
type Decision struct {
	// Estimate is what the decision was made for.
	Estimate Estimate
	// Checks are the comparisons made, in order (RAM, then VRAM).
	Checks []Check
	// Skipped lists checks that could not be made and why, e.g. "vram not
	// checked: gpu telemetry unavailable: ...". The caller should log them:
	// a skipped check is not a pass.
	Skipped []string
	// Disabled is true when PRISM_RESOURCE_CHECK=off turned the budget off.
	Disabled bool
	// Holder is another Prism process holding memory, when known.
	Holder *lock.Holder
}

// Err is nil when every check passed, else an *InsufficientResourcesError
// for the first failing one.
func (d Decision) Err() error {
	for _, c := range d.Checks {
		if !c.OK() {
			return &InsufficientResourcesError{Check: c, Estimate: d.Estimate, Holder: d.Holder}
		}
	}
	return nil
}

// Decide is the budget (spec P1): it compares free RAM (always) and free
// VRAM on the target device (CUDA only) with what est needs there plus the
// reserve. It is pure: everything it looks at is passed in.
//
// On the CPU the host needs the whole estimate. On CUDA the device needs
// the whole estimate and the host needs the weights once more, since they
// pass through host memory while the session is built.
//
// holder, when not nil, is named in the refusal as the process holding
// memory. A reading that is missing skips its check (listed in Skipped).
func Decide(est Estimate, r Readings, res Reserves, holder *lock.Holder) Decision {
	d := Decision{Estimate: est, Holder: holder}
	dev, err := ParseDevice(est.Device)
	if err != nil {
		d.Skipped = append(d.Skipped, "all checks: "+err.Error())
		return d
	}
	ramNeed := est.Total()
	if dev.CUDA {
		ramNeed = est.WeightBytes
	}
	if r.MemoryErr != nil {
		d.Skipped = append(d.Skipped, "ram not checked: "+r.MemoryErr.Error())
	} else {
		d.Checks = append(d.Checks, Check{Resource: RAM, Device: "host", Free: r.Memory.Available, Need: ramNeed, Reserve: res.RAM})
	}
	if !dev.CUDA {
		return d
	}
	g, ok := r.GPUs.Device(dev.Index)
	switch {
	case ok:
		name := dev.String()
		if g.Name != "" {
			name += " (" + g.Name + ")"
		}
		d.Checks = append(d.Checks, Check{Resource: VRAM, Device: name, Free: g.FreeBytes, Need: est.Total(), Reserve: res.VRAM})
	case r.GPUs.Err != nil && !r.GPUs.Available:
		d.Skipped = append(d.Skipped, "vram not checked: "+r.GPUs.Err.Error())
	default:
		d.Skipped = append(d.Skipped, fmt.Sprintf("vram not checked: %s not found among %d GPUs", dev, len(r.GPUs.Devices)))
	}
	return d
}

// CodeInsufficientResources is the spec's error code for a refused load,
// [errcode.InsufficientResources].
const CodeInsufficientResources = errcode.InsufficientResources

// ErrInsufficientResources matches every *InsufficientResourcesError with
// errors.Is.
var ErrInsufficientResources = errors.New("insufficient resources")

// InsufficientResourcesError is a load refused by the budget (spec P1). It
// is a model-load error: engine's ModelLoadError wraps it, so
// errors.As(err, &*InsufficientResourcesError) works on what prism.Open
// returns, and HTTP turns it into 503 insufficient_resources with
// Retry-After and error.holder (P4, P12).
type InsufficientResourcesError struct {
	// Check is the comparison that failed: resource, device, free, need and
	// reserve.
	Check Check
	// Estimate is the breakdown of the need.
	Estimate Estimate
	// Holder is another Prism process that holds memory (P12's
	// error.holder); nil when none is known, and then omitted.
	Holder *lock.Holder
}

// Code returns "insufficient_resources".
func (e *InsufficientResourcesError) Code() string { return CodeInsufficientResources }

// Unwrap returns ErrInsufficientResources.
func (e *InsufficientResourcesError) Unwrap() error { return ErrInsufficientResources }

// Override is how to get past the refusal: the reserve variable to lower,
// or PRISM_RESOURCE_CHECK=off.
func (e *InsufficientResourcesError) Override() string {
	v := EnvRAMReserve
	if e.Check.Resource == VRAM {
		v = EnvVRAMReserve
	}
	return fmt.Sprintf("lower %s (now %d) or set %s=off", v, e.Check.Reserve/MiB, EnvResourceCheck)
}

// Free is the free memory that was measured, in bytes.
func (e *InsufficientResourcesError) Free() uint64 { return e.Check.Free }

// Needed is need plus reserve, in bytes.
func (e *InsufficientResourcesError) Needed() uint64 { return e.Check.Required() }

// Error gives free versus needed memory, the breakdown, who holds memory
// and how to override.
func (e *InsufficientResourcesError) Error() string {
	var b strings.Builder
	c := e.Check
	fmt.Fprintf(&b, "insufficient %s on %s to load the model: %s free, %s needed (%s for the model + %s reserve",
		strings.ToUpper(c.Resource), c.Device, fmtBytes(c.Free), fmtBytes(c.Required()), fmtBytes(c.Need), fmtBytes(c.Reserve))
	est := e.Estimate
	if c.Need == est.Total() {
		caches := ""
		if est.Caches > 1 {
			caches = fmt.Sprintf(" × %d caches (batched sequences and the prefill's)", est.Caches)
		}
		fmt.Fprintf(&b, "; model = %s weights + %s KV cache for %d tokens%s + %s prefill headroom for %d-token chunks",
			fmtBytes(est.WeightBytes), fmtBytes(est.KVBytes), est.Tokens, caches, fmtBytes(est.PrefillBytes), est.PrefillChunk)
	} else if c.Need == est.WeightBytes {
		b.WriteString("; model = weights staged in host memory while loading to the GPU")
	}
	b.WriteString(")")
	if e.Holder != nil {
		fmt.Fprintf(&b, "; memory is held by Prism process %s: unload it there (POST /v1/unload) or stop it", e.Holder)
	}
	b.WriteString("; to override, ")
	b.WriteString(e.Override())
	return b.String()
}

// fmtBytes renders bytes as MiB or GiB with one decimal.
func fmtBytes(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/MiB)
}
