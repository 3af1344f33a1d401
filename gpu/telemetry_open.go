package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// OpenSampler opens a Sampler for exactly inv.GPUs (the selected GPUs, as Select returns
// them in an Inventory), reading from the source inv's vendor has:
//
//   - nvidia: NVML (cgo builds; WithNVML's library in tests). A CGO_ENABLED=0 build has no
//     telemetry: an error that errors.Is(err, ErrNotFound) says it needs a cgo build.
//   - amd: the AMD SMI library when opts.AMDSource is auto (on the live machine, or with
//     AMDSMIPath) or amdsmi, else, and whenever the library cannot be used, sysfs hwmon
//     (/sys/bus/pci/devices/<pci>/hwmon under SysfsRoot). Why the library was passed over
//     is the Sampler's first Unavailable (GPU -1, field "source").
//
// The GPUs are matched to the source's devices by UUID, then PCI address, then index; a
// GPU the source does not list is an error. Vendor none, or no GPUs, is an error wrapping
// ErrNotFound.
func OpenSampler(ctx context.Context, opts Options, inv Inventory) (Sampler, error) {
	if len(inv.GPUs) == 0 || inv.Vendor == VendorNone || inv.Vendor == "" {
		return nil, fmt.Errorf("no GPU telemetry: %w on this node (vendor %q, %d GPUs selected)", ErrNotFound, inv.Vendor, len(inv.GPUs))
	}
	switch inv.Vendor {
	case VendorNVIDIA:
		open := openNVMLSampler // telemetry_nvml.go (cgo) or telemetry_nocgo.go
		if opts.nvidiaSampler != nil {
			open = opts.nvidiaSampler
		}
		return open(ctx, opts, inv)
	case VendorAMD:
		return openAMDSampler(ctx, opts, inv)
	}
	return nil, fmt.Errorf("no GPU telemetry for vendor %q (want amd or nvidia)", inv.Vendor)
}

func openAMDSampler(ctx context.Context, opts Options, inv Inventory) (Sampler, error) {
	var why string
	switch opts.AMDSource {
	case SourceSysfs:
		why = "amdsmi not used: --source sysfs"
	case SourceAMDSMI:
		return openAMDSMISampler(ctx, opts, inv)
	default: // auto, and amd-smi (the CLI is too slow to sample; its library or sysfs answer instead)
		if opts.root() == "/" || opts.AMDSMIPath != "" {
			s, err := openAMDSMISampler(ctx, opts, inv)
			if err == nil {
				return s, nil
			}
			why = "amdsmi not used: " + reason(err)
		} else {
			why = "amdsmi not used: a recorded sysfs tree is read"
		}
	}
	u := &unavailable{}
	u.add(-1, "source", why)
	s, err := openHwmonSampler(opts, inv, u)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, why)
	}
	return s, nil
}

// unavailable is the list of facts a sampler could not read, each once per GPU and field.
// It is written by a sampler's read (which may run on a goroutine left behind by a Sample
// whose context ended) and read by the caller, so it has its own lock.
type unavailable struct {
	mu   sync.Mutex
	seen map[unavailableKey]struct{}
	list []Unavailable
}

type unavailableKey struct {
	gpu   int
	field string
}

// add records gpu's field as unavailable for why, unless it already is.
func (u *unavailable) add(gpu int, field, why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := unavailableKey{gpu, field}
	if _, ok := u.seen[k]; ok {
		return
	}
	if u.seen == nil {
		u.seen = map[unavailableKey]struct{}{}
	}
	u.seen[k] = struct{}{}
	u.list = append(u.list, Unavailable{GPU: gpu, Field: field, Why: why})
}

// all is a copy of the list.
func (u *unavailable) all() []Unavailable {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Unavailable(nil), u.list...)
}

// boundedSampler is what every source shares: Sample runs the source's read on its own
// goroutine and waits for it no longer than the context allows; a read still running
// (a driver call that does not return) makes later Samples answer at once with every GPU
// in error rather than stack up goroutines; a read that panics (a mock without the
// method, a library bug) is every GPU in error, not a crash.
type boundedSampler struct {
	source  string
	indices []int            // the GPUs' Index, in order
	read    func() []Reading // the source's read; may panic
	closeFn func() error     // releases the source; nil for none
	u       *unavailable     // shared with the source's read
	busy    chan struct{}    // holds a token while a read runs
	close   sync.Once
	closed  error
}

func newBoundedSampler(source string, inv Inventory, u *unavailable, read func() []Reading, closeFn func() error) *boundedSampler {
	s := &boundedSampler{source: source, read: read, closeFn: closeFn, u: u, busy: make(chan struct{}, 1)}
	for _, g := range inv.GPUs {
		s.indices = append(s.indices, g.Index)
	}
	return s
}

func (s *boundedSampler) Source() string             { return s.source }
func (s *boundedSampler) Unavailable() []Unavailable { return s.u.all() }

func (s *boundedSampler) Sample(ctx context.Context) []Reading {
	select {
	case s.busy <- struct{}{}:
	default:
		return s.failAll(errors.New("an earlier read has not returned"), true)
	}
	if err := ctx.Err(); err != nil {
		<-s.busy
		return s.failAll(fmt.Errorf("not read: %w", err), false)
	}
	done := make(chan []Reading, 1)
	go func() {
		var out []Reading
		defer func() {
			if p := recover(); p != nil {
				out = s.failAll(fmt.Errorf("%s: panic: %v", s.source, p), true)
			}
			<-s.busy
			done <- out
		}()
		out = s.read()
	}()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		// A deadline that passed is the source's slowness; a cancelled context is the
		// caller stopping, which says nothing about the GPUs.
		return s.failAll(fmt.Errorf("%s: no answer (%w)", s.source, ctx.Err()), !errors.Is(ctx.Err(), context.Canceled))
	}
}

// failAll is every GPU in error, each recorded (once) as unavailable when record is set.
func (s *boundedSampler) failAll(err error, record bool) []Reading {
	out := make([]Reading, len(s.indices))
	for i, idx := range s.indices {
		out[i] = Reading{Index: idx, Err: err}
		if record {
			s.u.add(idx, "gpu", err.Error())
		}
	}
	return out
}

// Close releases the source once; a read still running keeps what it holds until it
// returns.
func (s *boundedSampler) Close() error {
	s.close.Do(func() {
		if s.closeFn != nil {
			s.closed = s.closeFn()
		}
	})
	return s.closed
}

var _ Sampler = (*boundedSampler)(nil)

// matchGPUs finds each of inv's GPUs among a source's devices, by UUID, then PCI address,
// then index; found[i] is the device's position in devs. A GPU the source does not list
// is an error naming it.
func matchGPUs(source string, inv Inventory, devs []GPU) ([]int, error) {
	found := make([]int, len(inv.GPUs))
	for i, g := range inv.GPUs {
		found[i] = -1
		for j, d := range devs {
			switch {
			case g.UUID != "" && d.UUID != "":
				if g.UUID == d.UUID {
					found[i] = j
				}
			case g.PCIBusID != "" && d.PCIBusID != "":
				if g.PCIBusID == d.PCIBusID {
					found[i] = j
				}
			case g.Index == d.Index:
				found[i] = j
			}
			if found[i] >= 0 {
				break
			}
		}
		if found[i] < 0 {
			return nil, fmt.Errorf("%s does not list GPU %d (%s)", source, g.Index, firstString(g.UUID, g.PCIBusID, "no UUID or PCI address"))
		}
	}
	return found, nil
}

func ptr[T any](v T) *T { return &v }
