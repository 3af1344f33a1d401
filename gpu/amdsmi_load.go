package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The structure layouts of libamd_smi the binding knows (amdsmi_abi.h); the values are
// the C side's BC_ABI_* and must stay equal to them.
const (
	abi24_6 = 1 // amdsmi.h 24.6.x: ROCm 6.2
	abi26   = 2 // amdsmi.h 26.x: ROCm 7.x
)

// AMD SMI status codes the binding acts on (amdsmi_status_t, the same in 24.6 and 26.x).
const (
	statusSuccess      uint32 = 0
	statusNotSupported uint32 = 2
	// statusMissing is not the library's: it lacks the (optional) entry point.
	statusMissing uint32 = 0xFFFFFF00
)

// amdsmiTimeout bounds one session with the library (init, the reads, shutdown): a wedged
// GPU must not hold `benchctl gpus`, doctor or a failure's diagnostics for ever.
const amdsmiTimeout = 30 * time.Second

// smiLib is libamd_smi as the binding calls it (amdsmi_dl.go; a stub without cgo). Each
// call returns the library's status; handles are the library's opaque pointers.
type smiLib interface {
	Missing() []string // optional entry points the library lacks
	Init() uint32
	ShutDown() uint32
	Version() ([4]uint32, uint32)
	Processors() ([]uintptr, uint32)
	BDF(h uintptr) (string, uint32)
	ASIC(abi int, h uintptr) (smiASIC, uint32)
	VRAM(h uintptr) (total, used uint64, status uint32)
	ComputePartition(h uintptr) (string, uint32)
	MemoryPartition(h uintptr) (string, uint32)
	PowerCap(h uintptr) (microwatts uint64, status uint32)
	Clock(h uintptr, mem bool) (mhz, maxMHz, status uint32)
	Temperature(h uintptr, hotspot bool) (celsius int64, status uint32)
	Firmware(abi int, h uintptr) ([]smiFirmware, uint32)
	Driver(abi int, h uintptr) (string, uint32)
	Processes(abi int, h uintptr) (procs []Process, total int, status uint32)
	StatusString(st uint32) string // "" when the library has no amdsmi_status_code_to_string
	// Telemetry (telemetry_amdsmi.go).
	Power(abi int, h uintptr) (watts uint64, status uint32)                      // socket power; NOT_SUPPORTED when no member holds one
	Energy(h uintptr) (count uint64, microjoulesPerCount float64, status uint32) // the energy accumulator
	Activity(h uintptr) (gfxPercent uint32, status uint32)
	// Throttle is the gpu metrics table's revision and indep_throttle_status.
	Throttle(h uintptr) (format, content uint8, indep uint64, status uint32)
}

type smiASIC struct {
	MarketName string
	Serial     string
	DeviceID   uint64
	VendorID   uint32
	GfxVersion uint64 // target_graphics_version; MaxUint64 when the layout or the part has none
}

type smiFirmware struct {
	ID      uint32
	Version uint64
}

// AMDSMIError says why the AMD SMI library at Path did not answer: it could not be
// loaded, lacks an entry point benchctl needs, has a version whose structures benchctl
// does not know, or a call failed.
type AMDSMIError struct {
	Path   string
	Reason string
}

func (e *AMDSMIError) Error() string { return "AMD SMI library " + e.Path + ": " + e.Reason }

type missingSymbolError struct{ symbol string }

func (e *missingSymbolError) Error() string {
	return "lacks " + e.symbol + ", which benchctl needs"
}

// amdsmiLoaded is one dlopened library file. Loading is process-wide (dlopen), and so are
// amdsmi_init and amdsmi_shut_down: sem lets one session run at a time.
type amdsmiLoaded struct {
	path string
	lib  smiLib
	sem  chan struct{}
}

// amdsmiLibs holds each library file loaded in this process, or why it could not be:
// like dlopen itself, and like go-nvml's handle, it lives as long as the process.
var amdsmiLibs = struct {
	sync.Mutex
	m map[string]*amdsmiLoaded
	e map[string]error
}{m: map[string]*amdsmiLoaded{}, e: map[string]error{}}

// libraryFolders are searched, in order, for libamd_smi when Options.AMDSMIPath is "".
func libraryFolders() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if r := os.Getenv("ROCM_PATH"); r != "" {
		dirs = append(dirs, filepath.Join(r, "lib"))
	}
	return append(dirs, "/opt/rocm/lib", "/opt/rocm/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")
}

// amdsmiNames are the file names tried in each folder: the development link, then the
// sonames of the versions benchctl knows (and 25, to say why it is not used).
var amdsmiNames = []string{"libamd_smi.so", "libamd_smi.so.26", "libamd_smi.so.25", "libamd_smi.so.24"}

// findAMDSMI picks the library file. Only a regular file (after symbolic links) is ever
// passed to dlopen: dlopen opens its argument, and opening a named pipe blocks until a
// writer comes, so a FIFO or a folder in the way must never reach it.
func findAMDSMI(opts Options) (string, error) {
	if p := opts.AMDSMIPath; p != "" {
		switch err := regularFile(p); {
		case errors.Is(err, os.ErrNotExist):
			return "", &NotFoundError{Vendor: VendorAMD, Reason: p + " does not exist"}
		case err != nil:
			return "", &AMDSMIError{Path: p, Reason: err.Error()}
		}
		return p, nil
	}
	dirs := libraryFolders()
	var skipped []string
	for _, d := range dirs {
		for _, n := range amdsmiNames {
			p := filepath.Join(d, n)
			switch err := regularFile(p); {
			case err == nil:
				return p, nil
			case !errors.Is(err, os.ErrNotExist):
				skipped = append(skipped, p+" ("+err.Error()+")")
			}
		}
	}
	why := "libamd_smi.so not found in " + strings.Join(dirs, ", ")
	if len(skipped) > 0 {
		why += "; skipped " + strings.Join(skipped, ", ")
	}
	return "", &NotFoundError{Vendor: VendorAMD, Reason: why}
}

func regularFile(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	switch m := st.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return errors.New("is a directory, not a library")
	case m&os.ModeNamedPipe != 0:
		return errors.New("is a named pipe, not a library")
	default:
		return fmt.Errorf("is not a regular file (%s)", m.Type())
	}
}

// openAMDSMI finds and loads the library, once per file per process.
func openAMDSMI(opts Options) (*amdsmiLoaded, error) {
	path, err := findAMDSMI(opts)
	if err != nil {
		return nil, err
	}
	amdsmiLibs.Lock()
	defer amdsmiLibs.Unlock()
	if l, ok := amdsmiLibs.m[path]; ok {
		return l, nil
	}
	if err, ok := amdsmiLibs.e[path]; ok {
		return nil, err
	}
	lib, err := dlopenAMDSMI(path)
	if err != nil {
		err = &AMDSMIError{Path: path, Reason: err.Error()}
		amdsmiLibs.e[path] = err
		return nil, err
	}
	l := &amdsmiLoaded{path: path, lib: lib, sem: make(chan struct{}, 1)}
	amdsmiLibs.m[path] = l
	return l, nil
}

// smiSession is the library between amdsmi_init and amdsmi_shut_down, with the layout
// its version has.
type smiSession struct {
	lib     smiLib
	path    string
	abi     int
	version string
}

// runSMI calls fn in a session of l, at most one at a time per process, and returns what
// fn returns, when fn returns or when ctx (bounded by amdsmiTimeout) ends: a call stuck in
// the library is left behind, holding the session, and later calls time out waiting for
// it instead of stacking up. Results travel only through the channel, so a call that
// comes back late writes nothing the caller reads.
func runSMI[T any](ctx context.Context, l *amdsmiLoaded, fn func(*smiSession) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	var zero T
	ctx, cancel := context.WithTimeout(ctx, amdsmiTimeout)
	defer cancel()
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return zero, &AMDSMIError{Path: l.path, Reason: "an earlier call into the library has not returned (" + ctx.Err().Error() + ")"}
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-l.sem }()
		var r result
		r.err = l.session(func(s *smiSession) error {
			var err error
			r.v, err = fn(s)
			return err
		})
		done <- r
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, &AMDSMIError{Path: l.path, Reason: "no answer (" + ctx.Err().Error() + "); the call goes on in the background"}
	}
}

func (l *amdsmiLoaded) session(fn func(*smiSession) error) error {
	s := &smiSession{lib: l.lib, path: l.path}
	if st := l.lib.Init(); st != statusSuccess {
		return s.fail("amdsmi_init", st)
	}
	defer l.lib.ShutDown()
	words, st := l.lib.Version()
	if st != statusSuccess {
		return s.fail("amdsmi_get_lib_version", st)
	}
	s.abi, s.version = smiVersion(words)
	if s.abi == 0 {
		return &AMDSMIError{Path: l.path, Reason: "version " + s.version + " is not one whose structures benchctl knows " +
			"(AMD SMI 24.6 of ROCm 6.2, and 26.x of ROCm 7); reading it could misread every field"}
	}
	return fn(s)
}

// smiVersion reads amdsmi_version_t's first words. Up to 24.x the version began with a
// year (24.6.1.0: year 24, major 6, and the major changed with the structures); from 25.x
// there is no year and the first number is the major (26.1.0).
func smiVersion(w [4]uint32) (abi int, version string) {
	switch {
	case w[0] >= 25 && w[0] < 1000:
		if w[0] == 26 {
			abi = abi26
		}
		return abi, fmt.Sprintf("%d.%d.%d", w[0], w[1], w[2])
	case w[0] == 24 && w[1] == 6:
		abi = abi24_6
	}
	return abi, fmt.Sprintf("%d.%d.%d.%d", w[0], w[1], w[2], w[3])
}

// statusNames are amdsmi_status_t's names, for libraries without amdsmi_status_code_to_string.
var statusNames = map[uint32]string{
	1: "AMDSMI_STATUS_INVAL", 2: "AMDSMI_STATUS_NOT_SUPPORTED", 3: "AMDSMI_STATUS_NOT_YET_IMPLEMENTED",
	4: "AMDSMI_STATUS_FAIL_LOAD_MODULE", 5: "AMDSMI_STATUS_FAIL_LOAD_SYMBOL", 6: "AMDSMI_STATUS_DRM_ERROR",
	7: "AMDSMI_STATUS_API_FAILED", 8: "AMDSMI_STATUS_TIMEOUT", 9: "AMDSMI_STATUS_RETRY", 10: "AMDSMI_STATUS_NO_PERM",
	11: "AMDSMI_STATUS_INTERRUPT", 12: "AMDSMI_STATUS_IO", 13: "AMDSMI_STATUS_ADDRESS_FAULT", 14: "AMDSMI_STATUS_FILE_ERROR",
	15: "AMDSMI_STATUS_OUT_OF_RESOURCES", 16: "AMDSMI_STATUS_INTERNAL_EXCEPTION", 17: "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS",
	18: "AMDSMI_STATUS_INIT_ERROR", 19: "AMDSMI_STATUS_REFCOUNT_OVERFLOW", 30: "AMDSMI_STATUS_BUSY",
	31: "AMDSMI_STATUS_NOT_FOUND", 32: "AMDSMI_STATUS_NOT_INIT", 33: "AMDSMI_STATUS_NO_SLOT",
	34: "AMDSMI_STATUS_DRIVER_NOT_LOADED", 40: "AMDSMI_STATUS_NO_DATA", 41: "AMDSMI_STATUS_INSUFFICIENT_SIZE",
	42: "AMDSMI_STATUS_UNEXPECTED_SIZE", 43: "AMDSMI_STATUS_UNEXPECTED_DATA",
	0xFFFFFFFE: "AMDSMI_STATUS_MAP_ERROR", 0xFFFFFFFF: "AMDSMI_STATUS_UNKNOWN_ERROR",
}

func (s *smiSession) status(st uint32) string {
	text := s.lib.StatusString(st)
	if text == "" {
		text = statusNames[st]
	}
	if text == "" {
		text = "AMD SMI status"
	}
	return fmt.Sprintf("%s (status %d)", text, st)
}

func (s *smiSession) fail(call string, st uint32) error {
	return &AMDSMIError{Path: s.path, Reason: call + " failed: " + s.status(st)}
}
