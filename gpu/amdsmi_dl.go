//go:build cgo && linux

package gpu

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "amdsmi_abi.h"

// The entry points benchctl calls, in the order of amdsmiSymbols (amdsmi_dl.go).
enum {
	BC_INIT, BC_SHUT_DOWN, BC_GET_LIB_VERSION, BC_GET_SOCKET_HANDLES, BC_GET_PROCESSOR_HANDLES,
	BC_GET_GPU_DEVICE_BDF, BC_GET_GPU_ASIC_INFO, BC_GET_GPU_VRAM_USAGE,
	BC_GET_GPU_COMPUTE_PARTITION, BC_GET_GPU_MEMORY_PARTITION, BC_GET_POWER_CAP_INFO,
	BC_GET_CLOCK_INFO, BC_GET_TEMP_METRIC, BC_GET_FW_INFO, BC_GET_GPU_DRIVER_INFO,
	BC_GET_GPU_PROCESS_LIST, BC_STATUS_CODE_TO_STRING,
	BC_GET_POWER_INFO, BC_GET_ENERGY_COUNT, BC_GET_GPU_ACTIVITY, BC_GET_GPU_METRICS_INFO,
	BC_NFUNCS
};

// The layouts the binding knows (amdsmi_abi.h).
enum { BC_ABI_24_6 = 1, BC_ABI_26 = 2 };

// A structure the library fills is read into a zeroed buffer this much larger than the
// largest layout benchctl knows, so that a library whose structure has grown past the
// declared one cannot write past the buffer.
#define BC_GUARD 4096

typedef struct {
	void *dl;
	void *fn[BC_NFUNCS]; // NULL where the library lacks the entry point
} bc_lib;

// bc_open dlopens path (RTLD_NOW: a missing dependency fails here, not at a later call).
// dlerror is per thread, so it is read here, in the same C call.
static void *bc_open(const char *path, char *err, size_t errlen) {
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (dl == NULL) {
		const char *e = dlerror();
		strncpy(err, e ? e : "dlopen failed", errlen - 1);
		err[errlen - 1] = 0;
	}
	return dl;
}

static void *bc_sym(void *dl, const char *name) {
	dlerror();
	void *p = dlsym(dl, name);
	if (dlerror() != NULL) {
		return NULL;
	}
	return p;
}

// bc_copy copies a fixed-size character array that need not be NUL-terminated.
static void bc_copy(char *dst, size_t dstlen, const char *src, size_t srclen) {
	size_t n = strnlen(src, srclen);
	if (n > dstlen - 1) {
		n = dstlen - 1;
	}
	memcpy(dst, src, n);
	dst[n] = 0;
}

typedef bc_status_t (*bc_fn_void)(void);
typedef bc_status_t (*bc_fn_u64)(uint64_t);
typedef bc_status_t (*bc_fn_ptr)(void *);
typedef bc_status_t (*bc_fn_h_ptr)(void *, void *);

static bc_status_t bc_init(bc_lib *l) { return ((bc_fn_u64)l->fn[BC_INIT])(BC_INIT_AMD_GPUS); }
static bc_status_t bc_shut_down(bc_lib *l) { return ((bc_fn_void)l->fn[BC_SHUT_DOWN])(); }

// bc_version reads amdsmi_version_t's first four 32-bit words, whichever layout it has.
static bc_status_t bc_version(bc_lib *l, uint32_t words[4]) {
	union { bc_version_v24_t v24; bc_version_v26_t v26; unsigned char guard[BC_GUARD]; } u;
	memset(&u, 0, sizeof u);
	bc_status_t st = ((bc_fn_ptr)l->fn[BC_GET_LIB_VERSION])(&u);
	memcpy(words, &u, 4 * sizeof(uint32_t));
	return st;
}

// bc_sockets and bc_processors follow the library's two-call protocol: a count with a NULL
// array, then the array.
static bc_status_t bc_sockets(bc_lib *l, uint32_t *n, uintptr_t *out) {
	return ((bc_status_t (*)(uint32_t *, void **))l->fn[BC_GET_SOCKET_HANDLES])(n, (void **)out);
}
static bc_status_t bc_processors(bc_lib *l, uintptr_t socket, uint32_t *n, uintptr_t *out) {
	return ((bc_status_t (*)(void *, uint32_t *, void **))l->fn[BC_GET_PROCESSOR_HANDLES])((void *)socket, n, (void **)out);
}

// bc_bdf returns the PCI address as domain, bus, device and function.
static bc_status_t bc_bdf(bc_lib *l, uintptr_t h, uint64_t out[4]) {
	bc_bdf_t b;
	memset(&b, 0, sizeof b);
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_GPU_DEVICE_BDF])((void *)h, &b);
	out[0] = b.domain_number;
	out[1] = b.bus_number;
	out[2] = b.device_number;
	out[3] = b.function_number;
	return st;
}

typedef struct {
	char market_name[256];
	char serial[256];
	uint64_t device_id;
	uint64_t target_graphics_version; // UINT64_MAX: the layout has none or the part does not say
	uint32_t vendor_id;
} bc_asic_out;

static bc_status_t bc_asic(bc_lib *l, int abi, uintptr_t h, bc_asic_out *out) {
	union { bc_asic_info_v24_6_t v24; bc_asic_info_v26_t v26; unsigned char guard[BC_GUARD]; } u;
	memset(&u, 0, sizeof u);
	memset(out, 0, sizeof *out);
	out->target_graphics_version = UINT64_MAX;
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_GPU_ASIC_INFO])((void *)h, &u);
	if (st != BC_STATUS_SUCCESS) {
		return st;
	}
	if (abi == BC_ABI_24_6) {
		bc_copy(out->market_name, sizeof out->market_name, u.v24.market_name, sizeof u.v24.market_name);
		bc_copy(out->serial, sizeof out->serial, u.v24.asic_serial, sizeof u.v24.asic_serial);
		out->device_id = u.v24.device_id;
		out->vendor_id = u.v24.vendor_id;
	} else {
		bc_copy(out->market_name, sizeof out->market_name, u.v26.market_name, sizeof u.v26.market_name);
		bc_copy(out->serial, sizeof out->serial, u.v26.asic_serial, sizeof u.v26.asic_serial);
		out->device_id = u.v26.device_id;
		out->vendor_id = u.v26.vendor_id;
		out->target_graphics_version = u.v26.target_graphics_version;
	}
	return st;
}

static bc_status_t bc_vram(bc_lib *l, uintptr_t h, uint32_t *total_mb, uint32_t *used_mb) {
	bc_vram_usage_t v;
	memset(&v, 0, sizeof v);
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_GPU_VRAM_USAGE])((void *)h, &v);
	*total_mb = v.vram_total;
	*used_mb = v.vram_used;
	return st;
}

static bc_status_t bc_partition(bc_lib *l, int which, uintptr_t h, char *buf, uint32_t len) {
	memset(buf, 0, len);
	bc_status_t st = ((bc_status_t (*)(void *, char *, uint32_t))l->fn[which])((void *)h, buf, len - 1);
	buf[len - 1] = 0;
	return st;
}

static bc_status_t bc_power_cap(bc_lib *l, uintptr_t h, uint64_t *microwatts) {
	bc_power_cap_info_t p;
	memset(&p, 0, sizeof p);
	bc_status_t st = ((bc_status_t (*)(void *, uint32_t, bc_power_cap_info_t *))l->fn[BC_GET_POWER_CAP_INFO])((void *)h, 0, &p);
	*microwatts = p.power_cap;
	return st;
}

static bc_status_t bc_clock(bc_lib *l, uintptr_t h, uint32_t type, uint32_t *cur, uint32_t *max) {
	bc_clk_info_t c;
	memset(&c, 0, sizeof c);
	bc_status_t st = ((bc_status_t (*)(void *, uint32_t, bc_clk_info_t *))l->fn[BC_GET_CLOCK_INFO])((void *)h, type, &c);
	*cur = c.clk;
	*max = c.max_clk;
	return st;
}

static bc_status_t bc_temp(bc_lib *l, uintptr_t h, uint32_t type, int64_t *celsius) {
	*celsius = 0;
	return ((bc_status_t (*)(void *, uint32_t, uint32_t, int64_t *))l->fn[BC_GET_TEMP_METRIC])((void *)h, type, BC_TEMP_CURRENT, celsius);
}

#define BC_MAX_FW 128

typedef struct {
	uint32_t n;
	uint32_t id[BC_MAX_FW];
	uint64_t version[BC_MAX_FW];
} bc_fw_out;

static bc_status_t bc_fw(bc_lib *l, int abi, uintptr_t h, bc_fw_out *out) {
	union { bc_fw_info_v24_6_t v24; bc_fw_info_v26_t v26; unsigned char guard[BC_GUARD]; } u;
	memset(&u, 0, sizeof u);
	memset(out, 0, sizeof *out);
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_FW_INFO])((void *)h, &u);
	if (st != BC_STATUS_SUCCESS) {
		return st;
	}
	uint32_t max = abi == BC_ABI_24_6 ? 79 : 80;
	const bc_fw_entry_t *list = abi == BC_ABI_24_6 ? u.v24.fw_info_list : u.v26.fw_info_list;
	uint32_t n = abi == BC_ABI_24_6 ? u.v24.num_fw_info : u.v26.num_fw_info;
	if (n > max) {
		n = max;
	}
	for (uint32_t i = 0; i < n; i++) {
		out->id[i] = list[i].fw_id;
		out->version[i] = list[i].fw_version;
	}
	out->n = n;
	return st;
}

static bc_status_t bc_driver(bc_lib *l, int abi, uintptr_t h, char *version, size_t len) {
	union { bc_driver_info_v24_6_t v24; bc_driver_info_v26_t v26; unsigned char guard[BC_GUARD]; } u;
	memset(&u, 0, sizeof u);
	version[0] = 0;
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_GPU_DRIVER_INFO])((void *)h, &u);
	if (st != BC_STATUS_SUCCESS) {
		return st;
	}
	if (abi == BC_ABI_24_6) {
		bc_copy(version, len, u.v24.driver_version, sizeof u.v24.driver_version);
	} else {
		bc_copy(version, len, u.v26.driver_version, sizeof u.v26.driver_version);
	}
	return st;
}

#define BC_MAX_PROCS 64

typedef struct {
	uint32_t pid;
	uint64_t mem;
	uint64_t vram;
	char name[256];
	char container[256];
} bc_proc_out;

// bc_procs reads up to BC_MAX_PROCS processes; *total is how many the GPU has (more than
// were read when the library answers AMDSMI_STATUS_OUT_OF_RESOURCES).
static bc_status_t bc_procs(bc_lib *l, int abi, uintptr_t h, bc_proc_out *out, uint32_t *n, uint32_t *total) {
	size_t size = abi == BC_ABI_24_6 ? sizeof(bc_proc_info_v24_6_t) : sizeof(bc_proc_info_v26_t);
	unsigned char *buf = calloc(1, size * BC_MAX_PROCS + BC_GUARD);
	*n = 0;
	*total = 0;
	if (buf == NULL) {
		return BC_STATUS_OUT_OF_RESOURCES;
	}
	uint32_t max = BC_MAX_PROCS;
	bc_status_t st = ((bc_status_t (*)(void *, uint32_t *, void *))l->fn[BC_GET_GPU_PROCESS_LIST])((void *)h, &max, buf);
	if (st != BC_STATUS_SUCCESS && st != BC_STATUS_OUT_OF_RESOURCES) {
		free(buf);
		return st;
	}
	*total = max;
	uint32_t got = max < BC_MAX_PROCS ? max : BC_MAX_PROCS;
	for (uint32_t i = 0; i < got; i++) {
		bc_proc_out *o = &out[i];
		memset(o, 0, sizeof *o);
		if (abi == BC_ABI_24_6) {
			const bc_proc_info_v24_6_t *p = (const bc_proc_info_v24_6_t *)(buf + i * size);
			o->pid = p->pid;
			o->mem = p->mem;
			o->vram = p->memory_usage.vram_mem;
			bc_copy(o->name, sizeof o->name, p->name, sizeof p->name);
			bc_copy(o->container, sizeof o->container, p->container_name, sizeof p->container_name);
		} else {
			const bc_proc_info_v26_t *p = (const bc_proc_info_v26_t *)(buf + i * size);
			o->pid = p->pid;
			o->mem = p->mem;
			o->vram = p->memory_usage.vram_mem;
			bc_copy(o->name, sizeof o->name, p->name, sizeof p->name);
			bc_copy(o->container, sizeof o->container, p->container_name, sizeof p->container_name);
		}
	}
	*n = got;
	free(buf);
	return BC_STATUS_SUCCESS;
}

// bc_power reads the socket power in W: 26.x's socket_power, else current_socket_power,
// else average_socket_power; *watts is UINT64_MAX when none is given (0xFFFF, UINT32_MAX
// and UINT64_MAX are the library's "not supported").
static bc_status_t bc_power(bc_lib *l, int abi, uintptr_t h, uint64_t *watts) {
	union { bc_power_info_v24_6_t v24; bc_power_info_v26_t v26; unsigned char guard[BC_GUARD]; } u;
	memset(&u, 0, sizeof u);
	*watts = UINT64_MAX;
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_POWER_INFO])((void *)h, &u);
	if (st != BC_STATUS_SUCCESS) {
		return st;
	}
	uint64_t c[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
	if (abi == BC_ABI_24_6) {
		c[1] = u.v24.current_socket_power, c[2] = u.v24.average_socket_power;
	} else {
		c[0] = u.v26.socket_power, c[1] = u.v26.current_socket_power, c[2] = u.v26.average_socket_power;
	}
	for (int i = 0; i < 3; i++) {
		if (c[i] != UINT64_MAX && c[i] != UINT32_MAX && c[i] != 0xFFFF && c[i] != 0) {
			*watts = c[i];
			break;
		}
	}
	return st;
}

// bc_energy reads the energy accumulator and its resolution (microjoules per count).
static bc_status_t bc_energy(bc_lib *l, uintptr_t h, uint64_t *count, float *resolution) {
	uint64_t ts = 0;
	*count = 0;
	*resolution = 0;
	return ((bc_status_t (*)(void *, uint64_t *, float *, uint64_t *))l->fn[BC_GET_ENERGY_COUNT])((void *)h, count, resolution, &ts);
}

static bc_status_t bc_activity(bc_lib *l, uintptr_t h, uint32_t *gfx) {
	union { bc_engine_usage_t e; unsigned char guard[BC_GUARD]; } u;
	memset(&u, 0, sizeof u);
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_GPU_ACTIVITY])((void *)h, &u);
	*gfx = u.e.gfx_activity;
	return st;
}

// bc_metrics reads the gpu metrics table's revision and indep_throttle_status into a
// zeroed heap buffer far larger than any known layout.
static bc_status_t bc_metrics(bc_lib *l, uintptr_t h, uint8_t *format, uint8_t *content, uint64_t *indep) {
	*format = 0, *content = 0, *indep = UINT64_MAX;
	unsigned char *buf = calloc(1, BC_GPU_METRICS_BUFFER);
	if (buf == NULL) {
		return BC_STATUS_OUT_OF_RESOURCES;
	}
	bc_status_t st = ((bc_fn_h_ptr)l->fn[BC_GET_GPU_METRICS_INFO])((void *)h, buf);
	if (st == BC_STATUS_SUCCESS) {
		const bc_gpu_metrics_head_t *m = (const bc_gpu_metrics_head_t *)buf;
		*format = m->format_revision, *content = m->content_revision, *indep = m->indep_throttle_status;
	}
	free(buf);
	return st;
}

static void bc_status_string(bc_lib *l, bc_status_t st, char *buf, size_t len) {
	const char *s = NULL;
	buf[0] = 0;
	if (((bc_status_t (*)(bc_status_t, const char **))l->fn[BC_STATUS_CODE_TO_STRING])(st, &s) == BC_STATUS_SUCCESS && s != NULL) {
		bc_copy(buf, len, s, 256);
	}
}
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// amdsmiSymbols are the entry points, indexed like bc_lib.fn; required ones must all be
// there for the library to be used at all.
var amdsmiSymbols = [C.BC_NFUNCS]struct {
	name     string
	required bool
}{
	C.BC_INIT:                      {"amdsmi_init", true},
	C.BC_SHUT_DOWN:                 {"amdsmi_shut_down", true},
	C.BC_GET_LIB_VERSION:           {"amdsmi_get_lib_version", true},
	C.BC_GET_SOCKET_HANDLES:        {"amdsmi_get_socket_handles", true},
	C.BC_GET_PROCESSOR_HANDLES:     {"amdsmi_get_processor_handles", true},
	C.BC_GET_GPU_DEVICE_BDF:        {"amdsmi_get_gpu_device_bdf", true},
	C.BC_GET_GPU_ASIC_INFO:         {"amdsmi_get_gpu_asic_info", true},
	C.BC_GET_GPU_VRAM_USAGE:        {"amdsmi_get_gpu_vram_usage", true},
	C.BC_GET_GPU_COMPUTE_PARTITION: {"amdsmi_get_gpu_compute_partition", false},
	C.BC_GET_GPU_MEMORY_PARTITION:  {"amdsmi_get_gpu_memory_partition", false},
	C.BC_GET_POWER_CAP_INFO:        {"amdsmi_get_power_cap_info", false},
	C.BC_GET_CLOCK_INFO:            {"amdsmi_get_clock_info", false},
	C.BC_GET_TEMP_METRIC:           {"amdsmi_get_temp_metric", false},
	C.BC_GET_FW_INFO:               {"amdsmi_get_fw_info", false},
	C.BC_GET_GPU_DRIVER_INFO:       {"amdsmi_get_gpu_driver_info", false},
	C.BC_GET_GPU_PROCESS_LIST:      {"amdsmi_get_gpu_process_list", false},
	C.BC_STATUS_CODE_TO_STRING:     {"amdsmi_status_code_to_string", false},
	C.BC_GET_POWER_INFO:            {"amdsmi_get_power_info", false},
	C.BC_GET_ENERGY_COUNT:          {"amdsmi_get_energy_count", false},
	C.BC_GET_GPU_ACTIVITY:          {"amdsmi_get_gpu_activity", false},
	C.BC_GET_GPU_METRICS_INFO:      {"amdsmi_get_gpu_metrics_info", false},
}

// dlLib is a dlopened libamd_smi. It is never dlclosed: the library starts threads and
// holds C++ static state that unloading would leave dangling, so it stays mapped for the
// life of the process (one per path; see loadAMDSMI).
type dlLib struct {
	c       *C.bc_lib // C memory: cgo calls take it without pinning
	missing []string  // optional entry points the library lacks
}

// dlopenAMDSMI loads path and looks up the entry points. A missing required one is an
// error naming it; missing optional ones are listed in missing.
func dlopenAMDSMI(path string) (smiLib, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var errbuf [512]C.char
	dl := C.bc_open(cpath, &errbuf[0], C.size_t(len(errbuf)))
	if dl == nil {
		return nil, fmt.Errorf("dlopen: %s", C.GoString(&errbuf[0]))
	}
	l := (*C.bc_lib)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bc_lib{}))))
	l.dl = dl
	lib := &dlLib{c: l}
	for i, s := range amdsmiSymbols {
		name := C.CString(s.name)
		p := C.bc_sym(dl, name)
		C.free(unsafe.Pointer(name))
		if p == nil {
			if s.required {
				// The dlopen handle stays: dlclose of a C++ library is no safer here.
				C.free(unsafe.Pointer(l))
				return nil, &missingSymbolError{symbol: s.name}
			}
			lib.missing = append(lib.missing, s.name)
		}
		l.fn[i] = p
	}
	return lib, nil
}

func (l *dlLib) has(fn C.int) bool { return l.c.fn[fn] != nil }

func (l *dlLib) Missing() []string { return l.missing }

func (l *dlLib) Init() uint32     { return uint32(C.bc_init(l.c)) }
func (l *dlLib) ShutDown() uint32 { return uint32(C.bc_shut_down(l.c)) }

func (l *dlLib) Version() ([4]uint32, uint32) {
	var w [4]C.uint32_t
	st := C.bc_version(l.c, &w[0])
	return [4]uint32{uint32(w[0]), uint32(w[1]), uint32(w[2]), uint32(w[3])}, uint32(st)
}

func (l *dlLib) Processors() ([]uintptr, uint32) {
	var n C.uint32_t
	if st := C.bc_sockets(l.c, &n, nil); st != C.BC_STATUS_SUCCESS || n == 0 {
		return nil, uint32(st)
	}
	sockets := make([]C.uintptr_t, n)
	if st := C.bc_sockets(l.c, &n, &sockets[0]); st != C.BC_STATUS_SUCCESS {
		return nil, uint32(st)
	}
	var out []uintptr
	for _, s := range sockets[:min(int(n), len(sockets))] {
		var k C.uint32_t
		if st := C.bc_processors(l.c, s, &k, nil); st != C.BC_STATUS_SUCCESS {
			return nil, uint32(st)
		}
		if k == 0 {
			continue
		}
		hs := make([]C.uintptr_t, k)
		if st := C.bc_processors(l.c, s, &k, &hs[0]); st != C.BC_STATUS_SUCCESS {
			return nil, uint32(st)
		}
		for _, h := range hs[:min(int(k), len(hs))] {
			out = append(out, uintptr(h))
		}
	}
	return out, C.BC_STATUS_SUCCESS
}

func (l *dlLib) BDF(h uintptr) (string, uint32) {
	var b [4]C.uint64_t
	st := C.bc_bdf(l.c, C.uintptr_t(h), &b[0])
	return fmt.Sprintf("%04x:%02x:%02x.%x", uint64(b[0]), uint64(b[1]), uint64(b[2]), uint64(b[3])), uint32(st)
}

func (l *dlLib) ASIC(abi int, h uintptr) (smiASIC, uint32) {
	var o C.bc_asic_out
	st := C.bc_asic(l.c, C.int(abi), C.uintptr_t(h), &o)
	return smiASIC{
		MarketName: C.GoString(&o.market_name[0]),
		Serial:     C.GoString(&o.serial[0]),
		DeviceID:   uint64(o.device_id),
		VendorID:   uint32(o.vendor_id),
		GfxVersion: uint64(o.target_graphics_version),
	}, uint32(st)
}

func (l *dlLib) VRAM(h uintptr) (uint64, uint64, uint32) {
	var total, used C.uint32_t
	st := C.bc_vram(l.c, C.uintptr_t(h), &total, &used)
	return uint64(total) << 20, uint64(used) << 20, uint32(st)
}

func (l *dlLib) partition(fn C.int, h uintptr) (string, uint32) {
	if !l.has(fn) {
		return "", statusMissing
	}
	var buf [64]C.char
	st := C.bc_partition(l.c, fn, C.uintptr_t(h), &buf[0], C.uint32_t(len(buf)))
	return C.GoString(&buf[0]), uint32(st)
}

func (l *dlLib) ComputePartition(h uintptr) (string, uint32) {
	return l.partition(C.BC_GET_GPU_COMPUTE_PARTITION, h)
}

func (l *dlLib) MemoryPartition(h uintptr) (string, uint32) {
	return l.partition(C.BC_GET_GPU_MEMORY_PARTITION, h)
}

func (l *dlLib) PowerCap(h uintptr) (uint64, uint32) {
	if !l.has(C.BC_GET_POWER_CAP_INFO) {
		return 0, statusMissing
	}
	var uw C.uint64_t
	st := C.bc_power_cap(l.c, C.uintptr_t(h), &uw)
	return uint64(uw), uint32(st)
}

func (l *dlLib) Clock(h uintptr, mem bool) (uint32, uint32, uint32) {
	if !l.has(C.BC_GET_CLOCK_INFO) {
		return 0, 0, statusMissing
	}
	typ := C.uint32_t(C.BC_CLK_TYPE_GFX)
	if mem {
		typ = C.BC_CLK_TYPE_MEM
	}
	var cur, max C.uint32_t
	st := C.bc_clock(l.c, C.uintptr_t(h), typ, &cur, &max)
	return uint32(cur), uint32(max), uint32(st)
}

func (l *dlLib) Temperature(h uintptr, hotspot bool) (int64, uint32) {
	if !l.has(C.BC_GET_TEMP_METRIC) {
		return 0, statusMissing
	}
	typ := C.uint32_t(C.BC_TEMP_TYPE_EDGE)
	if hotspot {
		typ = C.BC_TEMP_TYPE_HOTSPOT
	}
	var c C.int64_t
	st := C.bc_temp(l.c, C.uintptr_t(h), typ, &c)
	return int64(c), uint32(st)
}

func (l *dlLib) Firmware(abi int, h uintptr) ([]smiFirmware, uint32) {
	if !l.has(C.BC_GET_FW_INFO) {
		return nil, statusMissing
	}
	o := (*C.bc_fw_out)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bc_fw_out{}))))
	defer C.free(unsafe.Pointer(o))
	st := C.bc_fw(l.c, C.int(abi), C.uintptr_t(h), o)
	out := make([]smiFirmware, 0, int(o.n))
	for i := 0; i < int(o.n) && i < len(o.id); i++ {
		out = append(out, smiFirmware{ID: uint32(o.id[i]), Version: uint64(o.version[i])})
	}
	return out, uint32(st)
}

func (l *dlLib) Driver(abi int, h uintptr) (string, uint32) {
	if !l.has(C.BC_GET_GPU_DRIVER_INFO) {
		return "", statusMissing
	}
	var buf [256]C.char
	st := C.bc_driver(l.c, C.int(abi), C.uintptr_t(h), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0]), uint32(st)
}

func (l *dlLib) Processes(abi int, h uintptr) ([]Process, int, uint32) {
	if !l.has(C.BC_GET_GPU_PROCESS_LIST) {
		return nil, 0, statusMissing
	}
	buf := (*[C.BC_MAX_PROCS]C.bc_proc_out)(C.calloc(C.BC_MAX_PROCS, C.size_t(unsafe.Sizeof(C.bc_proc_out{}))))
	defer C.free(unsafe.Pointer(buf))
	var n, total C.uint32_t
	st := C.bc_procs(l.c, C.int(abi), C.uintptr_t(h), &buf[0], &n, &total)
	out := []Process{}
	for i := 0; i < int(n) && i < len(buf); i++ {
		p := &buf[i]
		mem := uint64(p.vram)
		if mem == 0 {
			mem = uint64(p.mem)
		}
		out = append(out, Process{PID: uint32(p.pid), Name: C.GoString(&p.name[0]), MemoryBytes: mem, Container: C.GoString(&p.container[0])})
	}
	return out, int(total), uint32(st)
}

func (l *dlLib) Power(abi int, h uintptr) (uint64, uint32) {
	if !l.has(C.BC_GET_POWER_INFO) {
		return 0, statusMissing
	}
	var w C.uint64_t
	st := C.bc_power(l.c, C.int(abi), C.uintptr_t(h), &w)
	if st == C.BC_STATUS_SUCCESS && uint64(w) == math.MaxUint64 {
		return 0, statusNotSupported
	}
	return uint64(w), uint32(st)
}

func (l *dlLib) Energy(h uintptr) (uint64, float64, uint32) {
	if !l.has(C.BC_GET_ENERGY_COUNT) {
		return 0, 0, statusMissing
	}
	var n C.uint64_t
	var res C.float
	st := C.bc_energy(l.c, C.uintptr_t(h), &n, &res)
	return uint64(n), float64(res), uint32(st)
}

func (l *dlLib) Activity(h uintptr) (uint32, uint32) {
	if !l.has(C.BC_GET_GPU_ACTIVITY) {
		return 0, statusMissing
	}
	var gfx C.uint32_t
	st := C.bc_activity(l.c, C.uintptr_t(h), &gfx)
	return uint32(gfx), uint32(st)
}

func (l *dlLib) Throttle(h uintptr) (uint8, uint8, uint64, uint32) {
	if !l.has(C.BC_GET_GPU_METRICS_INFO) {
		return 0, 0, 0, statusMissing
	}
	var format, content C.uint8_t
	var indep C.uint64_t
	st := C.bc_metrics(l.c, C.uintptr_t(h), &format, &content, &indep)
	return uint8(format), uint8(content), uint64(indep), uint32(st)
}

func (l *dlLib) StatusString(st uint32) string {
	if !l.has(C.BC_STATUS_CODE_TO_STRING) {
		return ""
	}
	var buf [256]C.char
	C.bc_status_string(l.c, C.bc_status_t(st), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

// The C side's layout numbers must be the Go side's (amdsmi_load.go); a difference fails the build.
const (
	_ = uint(C.BC_ABI_24_6-abi24_6) + uint(abi24_6-C.BC_ABI_24_6)
	_ = uint(C.BC_ABI_26-abi26) + uint(abi26-C.BC_ABI_26)
)

var _ smiLib = (*dlLib)(nil)
