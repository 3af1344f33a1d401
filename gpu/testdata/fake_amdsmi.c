// fake_amdsmi.c: a stand-in for libamd_smi.so with the C entry points benchctl's binding
// calls, answering as an 8 x MI300X node (gfx942, 192 GiB HBM3, two sockets of four) would.
// The tests compile it with the system cc into a temporary folder (amdsmi_test.go).
//
// Its structures are written here from AMD SMI's amdsmi.h (24.6.1 and 26.1.0) on their own,
// not taken from the binding's amdsmi_abi.h, so that a mistake in one shows against the other.
//
// Environment, read at each call:
//   FAKE_AMDSMI_VERSION    the library version: 26.1.0 (default), 24.6.1, or any a.b.c[.d]
//   FAKE_AMDSMI_FAIL       init: amdsmi_init fails; vram: amdsmi_get_gpu_vram_usage fails on
//                          the fourth GPU; temp: amdsmi_get_temp_metric fails on the fourth GPU
//   FAKE_AMDSMI_PARTITION  the compute partition (default SPX); the memory one is NPS1
//   FAKE_AMDSMI_GPUS       how many GPUs (default 8)
//   FAKE_AMDSMI_SLEEP_MS   amdsmi_init sleeps this long first (a wedged driver)
//   FAKE_AMDSMI_LOST       the GPU at this bus number (hex, e.g. bf) answers every telemetry
//                          call with AMDSMI_STATUS_NOT_FOUND (it fell off the bus)
//   FAKE_AMDSMI_ENERGY     none: amdsmi_get_energy_count answers AMDSMI_STATUS_NOT_SUPPORTED
//   FAKE_AMDSMI_THROTTLE   indep_throttle_status of every GPU, in hex (default 0); "old": a
//                          v1.2 metrics table, which has none
// amdsmi_init and amdsmi_shut_down count their callers, as the library does, so that a
// telemetry session and a snapshot can overlap.
// Build variants: -DFAKE_OMIT_REQUIRED leaves out amdsmi_get_gpu_vram_usage;
// -DFAKE_OMIT_OPTIONAL leaves out amdsmi_get_gpu_memory_partition,
// amdsmi_get_gpu_process_list, amdsmi_status_code_to_string and the telemetry calls
// amdsmi_get_power_info, amdsmi_get_energy_count, amdsmi_get_gpu_activity and
// amdsmi_get_gpu_metrics_info (an older library).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int amdsmi_status_t;
#define AMDSMI_STATUS_SUCCESS 0
#define AMDSMI_STATUS_INVAL 1
#define AMDSMI_STATUS_NOT_SUPPORTED 2
#define AMDSMI_STATUS_NO_PERM 10
#define AMDSMI_STATUS_OUT_OF_RESOURCES 15
#define AMDSMI_STATUS_INIT_ERROR 18
#define AMDSMI_STATUS_NOT_FOUND 31
#define AMDSMI_STATUS_NOT_INIT 32

typedef void *amdsmi_socket_handle;
typedef void *amdsmi_processor_handle;

typedef union {
	struct {
		uint64_t function_number : 3;
		uint64_t device_number : 5;
		uint64_t bus_number : 8;
		uint64_t domain_number : 48;
	};
	uint64_t as_uint;
} amdsmi_bdf_t;

typedef struct { uint32_t year, major, minor, release; const char *build; } version24_t;
typedef struct { uint32_t major, minor, release; const char *build; } version26_t;

typedef struct { uint32_t vram_total, vram_used, reserved[2]; } amdsmi_vram_usage_t;
typedef struct { uint64_t power_cap, default_power_cap, dpm_cap, min_power_cap, max_power_cap, reserved[3]; } amdsmi_power_cap_info_t;
typedef struct { uint32_t clk, min_clk, max_clk; uint8_t clk_locked, clk_deep_sleep; uint32_t reserved[4]; } amdsmi_clk_info_t;

// amdsmi_power_info_t: 24.6.1 (all 32-bit) and 26.1.0 (socket_power first, 64-bit voltages).
typedef struct {
	uint32_t current_socket_power, average_socket_power, gfx_voltage, soc_voltage, mem_voltage, power_limit, reserved[11];
} power24_t;
typedef struct {
	uint64_t socket_power;
	uint32_t current_socket_power, average_socket_power;
	uint64_t gfx_voltage, soc_voltage, mem_voltage;
	uint32_t power_limit;
	uint64_t reserved[18];
} power26_t;
typedef struct { uint32_t gfx_activity, umc_activity, mm_activity, reserved[13]; } amdsmi_engine_usage_t;

typedef struct {
	char market_name[256];
	uint32_t vendor_id;
	char vendor_name[64];
	uint32_t subvendor_id;
	uint64_t device_id;
	uint32_t rev_id;
	char asic_serial[32];
	uint32_t oam_id;
	uint32_t reserved[18];
} asic24_t;

typedef struct {
	char market_name[256];
	uint32_t vendor_id;
	char vendor_name[256];
	uint32_t subvendor_id;
	uint64_t device_id;
	uint32_t rev_id;
	char asic_serial[256];
	uint32_t oam_id;
	uint32_t num_of_compute_units;
	uint64_t target_graphics_version;
	uint32_t subsystem_id;
	uint32_t reserved[21];
} asic26_t;

typedef struct { char driver_version[64], driver_date[64], driver_name[64]; } driver24_t;
typedef struct { char driver_version[256], driver_date[256], driver_name[256]; } driver26_t;

typedef struct { int fw_id; uint64_t fw_version; uint64_t reserved[2]; } fw_entry_t;
typedef struct { uint8_t num_fw_info; fw_entry_t fw_info_list[79]; uint32_t reserved[7]; } fw24_t;
typedef struct { uint8_t num_fw_info; fw_entry_t fw_info_list[80]; uint32_t reserved[7]; } fw26_t;

typedef struct {
	char name[32];
	uint32_t pid;
	uint64_t mem;
	struct { uint64_t gfx, enc; uint32_t reserved[12]; } engine_usage;
	struct { uint64_t gtt_mem, cpu_mem, vram_mem; uint32_t reserved[10]; } memory_usage;
	char container_name[32];
	uint32_t reserved[4];
} proc24_t;

typedef struct {
	char name[256];
	uint32_t pid;
	uint64_t mem;
	struct { uint64_t gfx, enc; uint32_t reserved[12]; } engine_usage;
	struct { uint64_t gtt_mem, cpu_mem, vram_mem; uint32_t reserved[10]; } memory_usage;
	char container_name[256];
	uint32_t cu_occupancy, evicted_time, reserved[10];
} proc26_t;

// The GPUs in the order the fake lists them: socket 1's before socket 0's, so that the
// library's order is not the KFD topology's (tests/fixtures/sysfs/mi300x).
typedef struct { uint8_t bus; const char *serial; int kfd; } fake_gpu;
static const fake_gpu gpus[8] = {
	{0x9f, "0x3B8A1D6F2C9E8944", 4}, {0xaf, "0x3B8A1D6F2C9E9A55", 5}, {0xbf, "0x3B8A1D6F2C9EAB66", 6}, {0xdf, "0x3B8A1D6F2C9EBC77", 7},
	{0x0c, "0x3B8A1D6F2C9E4500", 0}, {0x22, "0x3B8A1D6F2C9E5611", 1}, {0x38, "0x3B8A1D6F2C9E6722", 2}, {0x5c, "0x3B8A1D6F2C9E7833", 3},
};
static int sockets[2];
static int initialised;

static const char *env(const char *k, const char *def) {
	const char *v = getenv(k);
	return v && *v ? v : def;
}
static int fails(const char *what) { return strcmp(env("FAKE_AMDSMI_FAIL", ""), what) == 0; }
static int ngpus(void) {
	int n = atoi(env("FAKE_AMDSMI_GPUS", "8"));
	return n < 0 ? 0 : n > 8 ? 8 : n;
}
static int version(uint32_t v[4]) {
	memset(v, 0, 4 * sizeof v[0]);
	return sscanf(env("FAKE_AMDSMI_VERSION", "26.1.0"), "%u.%u.%u.%u", &v[0], &v[1], &v[2], &v[3]);
}
static int new_layout(void) {
	uint32_t v[4];
	version(v);
	return v[0] >= 25;
}
// gpu_of returns the GPU a handle points at, or -1.
static int gpu_of(amdsmi_processor_handle h) {
	const fake_gpu *g = h;
	if (!initialised || g < gpus || g >= gpus + ngpus()) {
		return -1;
	}
	return (int)(g - gpus);
}

amdsmi_status_t amdsmi_init(uint64_t flags) {
	long ms = atol(env("FAKE_AMDSMI_SLEEP_MS", "0"));
	if (ms > 0) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (fails("init") || (flags & 2) == 0) {
		return AMDSMI_STATUS_INIT_ERROR;
	}
	initialised++;
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_shut_down(void) {
	if (initialised > 0) {
		initialised--;
	}
	return AMDSMI_STATUS_SUCCESS;
}

// lost reports whether FAKE_AMDSMI_LOST names GPU i's bus.
static int lost(int i) {
	const char *v = env("FAKE_AMDSMI_LOST", "");
	return *v && strtol(v, NULL, 16) == gpus[i].bus;
}

amdsmi_status_t amdsmi_get_lib_version(void *out) {
	uint32_t v[4];
	int parts = version(v);
	if (v[0] >= 25 && parts <= 3) {
		version26_t *o = out;
		o->major = v[0], o->minor = v[1], o->release = v[2], o->build = "fake";
	} else {
		version24_t *o = out;
		o->year = v[0], o->major = v[1], o->minor = v[2], o->release = v[3], o->build = "fake";
	}
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_socket_handles(uint32_t *count, amdsmi_socket_handle *out) {
	uint32_t n = ngpus() == 0 ? 0 : ngpus() > 4 ? 2 : 1;
	if (!initialised) {
		return AMDSMI_STATUS_NOT_INIT;
	}
	if (out == NULL) {
		*count = n;
		return AMDSMI_STATUS_SUCCESS;
	}
	for (uint32_t i = 0; i < n && i < *count; i++) {
		out[i] = &sockets[i];
	}
	*count = n;
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_processor_handles(amdsmi_socket_handle s, uint32_t *count, amdsmi_processor_handle *out) {
	int which = (int *)s - sockets, first = which * 4, n = ngpus() - first;
	if (!initialised || which < 0 || which > 1) {
		return AMDSMI_STATUS_INVAL;
	}
	n = n > 4 ? 4 : n < 0 ? 0 : n;
	if (out == NULL) {
		*count = (uint32_t)n;
		return AMDSMI_STATUS_SUCCESS;
	}
	for (int i = 0; i < n && i < (int)*count; i++) {
		out[i] = (void *)&gpus[first + i];
	}
	*count = (uint32_t)n;
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_device_bdf(amdsmi_processor_handle h, amdsmi_bdf_t *bdf) {
	int i = gpu_of(h);
	if (i < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	bdf->as_uint = 0;
	bdf->bus_number = gpus[i].bus;
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_asic_info(amdsmi_processor_handle h, void *out) {
	int i = gpu_of(h);
	if (i < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (new_layout()) {
		asic26_t *a = out;
		memset(a, 0, sizeof *a);
		strcpy(a->market_name, "AMD Instinct MI300X");
		a->vendor_id = 0x1002;
		strcpy(a->vendor_name, "Advanced Micro Devices Inc. [AMD/ATI]");
		a->subvendor_id = 0x1002;
		a->device_id = 0x74a1;
		strcpy(a->asic_serial, gpus[i].serial);
		a->oam_id = (uint32_t)gpus[i].kfd;
		a->num_of_compute_units = 304;
		a->target_graphics_version = 0x942; // amd-smi prints "gfx" + hex(value)
		a->subsystem_id = 0x74a1;
	} else {
		asic24_t *a = out;
		memset(a, 0, sizeof *a);
		strcpy(a->market_name, "AMD Instinct MI300X");
		a->vendor_id = 0x1002;
		strcpy(a->vendor_name, "Advanced Micro Devices Inc. [AMD/ATI]");
		a->subvendor_id = 0x1002;
		a->device_id = 0x74a1;
		strcpy(a->asic_serial, gpus[i].serial);
		a->oam_id = (uint32_t)gpus[i].kfd;
	}
	return AMDSMI_STATUS_SUCCESS;
}

#ifndef FAKE_OMIT_REQUIRED
amdsmi_status_t amdsmi_get_gpu_vram_usage(amdsmi_processor_handle h, amdsmi_vram_usage_t *v) {
	int i = gpu_of(h);
	if (i < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (lost(i)) {
		return AMDSMI_STATUS_NOT_FOUND;
	}
	if (fails("vram") && i == 3) {
		return AMDSMI_STATUS_NO_PERM;
	}
	v->vram_total = 196592; // MB, as amd-smi prints for a 192 GiB MI300X
	v->vram_used = i == 2 ? 12571 : 283;
	return AMDSMI_STATUS_SUCCESS;
}
#endif

amdsmi_status_t amdsmi_get_gpu_compute_partition(amdsmi_processor_handle h, char *buf, uint32_t len) {
	if (gpu_of(h) < 0 || len == 0) {
		return AMDSMI_STATUS_INVAL;
	}
	snprintf(buf, len, "%s", env("FAKE_AMDSMI_PARTITION", "SPX"));
	return AMDSMI_STATUS_SUCCESS;
}

#ifndef FAKE_OMIT_OPTIONAL
amdsmi_status_t amdsmi_get_gpu_memory_partition(amdsmi_processor_handle h, char *buf, uint32_t len) {
	if (gpu_of(h) < 0 || len == 0) {
		return AMDSMI_STATUS_INVAL;
	}
	snprintf(buf, len, "NPS1");
	return AMDSMI_STATUS_SUCCESS;
}
#endif

amdsmi_status_t amdsmi_get_power_cap_info(amdsmi_processor_handle h, uint32_t sensor, amdsmi_power_cap_info_t *p) {
	if (gpu_of(h) < 0 || sensor != 0) {
		return AMDSMI_STATUS_INVAL;
	}
	memset(p, 0, sizeof *p);
	p->power_cap = p->default_power_cap = p->max_power_cap = 750000000; // uW
	p->min_power_cap = 0;
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_clock_info(amdsmi_processor_handle h, int type, amdsmi_clk_info_t *c) {
	if (gpu_of(h) < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (lost(gpu_of(h))) {
		return AMDSMI_STATUS_NOT_FOUND;
	}
	memset(c, 0, sizeof *c);
	switch (type) {
	case 0: // AMDSMI_CLK_TYPE_GFX
		c->clk = 132, c->min_clk = 500, c->max_clk = 2100;
		return AMDSMI_STATUS_SUCCESS;
	case 4: // AMDSMI_CLK_TYPE_MEM
		c->clk = 900, c->min_clk = 900, c->max_clk = 1300;
		return AMDSMI_STATUS_SUCCESS;
	}
	return AMDSMI_STATUS_NOT_SUPPORTED;
}

amdsmi_status_t amdsmi_get_temp_metric(amdsmi_processor_handle h, int type, int metric, int64_t *t) {
	int i = gpu_of(h);
	if (i < 0 || metric != 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (lost(i)) {
		return AMDSMI_STATUS_NOT_FOUND;
	}
	if (fails("temp") && i == 3) {
		return AMDSMI_STATUS_NO_PERM;
	}
	if (type == 0) { // edge: MI300X has no edge sensor
		return AMDSMI_STATUS_NOT_SUPPORTED;
	}
	*t = type == 1 ? 41 + i : 0; // hotspot, degrees Celsius
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_fw_info(amdsmi_processor_handle h, void *out) {
	// AMDSMI_FW_ID_SMU 1, AMDSMI_FW_ID_PSP_SOSDRV 30, AMDSMI_FW_ID_TA_RAS 73, AMDSMI_FW_ID_DMCU 78
	static const fw_entry_t list[4] = {{1, 0x00556800, {0, 0}}, {30, 0x00210085, {0, 0}}, {73, 0x1b000231, {0, 0}}, {78, 0x1, {0, 0}}};
	if (gpu_of(h) < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (new_layout()) {
		fw26_t *f = out;
		memset(f, 0, sizeof *f);
		f->num_fw_info = 4;
		memcpy(f->fw_info_list, list, sizeof list);
	} else {
		fw24_t *f = out;
		memset(f, 0, sizeof *f);
		f->num_fw_info = 4;
		memcpy(f->fw_info_list, list, sizeof list);
	}
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_driver_info(amdsmi_processor_handle h, void *out) {
	if (gpu_of(h) < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (new_layout()) {
		driver26_t *d = out;
		memset(d, 0, sizeof *d);
		strcpy(d->driver_version, "6.12.12");
		strcpy(d->driver_date, "2015/01/01 00:00");
		strcpy(d->driver_name, "amdgpu");
	} else {
		driver24_t *d = out;
		memset(d, 0, sizeof *d);
		strcpy(d->driver_version, "6.8.5");
		strcpy(d->driver_date, "2015/01/01 00:00");
		strcpy(d->driver_name, "amdgpu");
	}
	return AMDSMI_STATUS_SUCCESS;
}

#ifndef FAKE_OMIT_OPTIONAL
// The third GPU the fake lists (bus 0xbf) runs two processes; the others none.
amdsmi_status_t amdsmi_get_gpu_process_list(amdsmi_processor_handle h, uint32_t *max, void *list) {
	int i = gpu_of(h);
	uint32_t n = i == 2 ? 2 : 0;
	if (i < 0 || max == NULL) {
		return AMDSMI_STATUS_INVAL;
	}
	if (*max == 0 || n == 0) {
		*max = n;
		return AMDSMI_STATUS_SUCCESS;
	}
	if (list == NULL) {
		return AMDSMI_STATUS_INVAL;
	}
	uint32_t room = *max < n ? *max : n;
	for (uint32_t k = 0; k < room; k++) {
		uint32_t pid = k == 0 ? 4242 : 4343;
		uint64_t vram = k == 0 ? (uint64_t)12 << 30 : (uint64_t)256 << 20;
		const char *name = k == 0 ? "python3" : "rccl-tests", *ctr = k == 0 ? "bench-r0" : "";
		if (new_layout()) {
			proc26_t *p = (proc26_t *)list + k;
			memset(p, 0, sizeof *p);
			strcpy(p->name, name), strcpy(p->container_name, ctr);
			p->pid = pid, p->mem = vram + 4096, p->memory_usage.vram_mem = vram, p->cu_occupancy = 304;
		} else {
			proc24_t *p = (proc24_t *)list + k;
			memset(p, 0, sizeof *p);
			strcpy(p->name, name), strcpy(p->container_name, ctr);
			p->pid = pid, p->mem = vram + 4096, p->memory_usage.vram_mem = vram;
		}
	}
	*max = n;
	return room < n ? AMDSMI_STATUS_OUT_OF_RESOURCES : AMDSMI_STATUS_SUCCESS;
}

// Socket power: 300 W plus 10 W per GPU (in the fake's order); 26.x fills socket_power and
// current_socket_power, 24.6 current_socket_power, the rest "not supported" (UINT32_MAX).
amdsmi_status_t amdsmi_get_power_info(amdsmi_processor_handle h, void *out) {
	int i = gpu_of(h);
	if (i < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (lost(i)) {
		return AMDSMI_STATUS_NOT_FOUND;
	}
	uint32_t w = 300 + 10 * (uint32_t)i;
	if (new_layout()) {
		power26_t *p = out;
		memset(p, 0xff, sizeof *p);
		p->socket_power = w, p->current_socket_power = w, p->power_limit = 750;
	} else {
		power24_t *p = out;
		memset(p, 0xff, sizeof *p);
		p->current_socket_power = w, p->power_limit = 750;
	}
	return AMDSMI_STATUS_SUCCESS;
}

// The energy accumulator grows by 1,000,000 counts (15.259 J at 15.259 µJ a count) on each call.
amdsmi_status_t amdsmi_get_energy_count(amdsmi_processor_handle h, uint64_t *energy, float *resolution, uint64_t *timestamp) {
	static uint64_t counts[8];
	int i = gpu_of(h);
	if (i < 0 || energy == NULL || resolution == NULL || timestamp == NULL) {
		return AMDSMI_STATUS_INVAL;
	}
	if (lost(i)) {
		return AMDSMI_STATUS_NOT_FOUND;
	}
	if (strcmp(env("FAKE_AMDSMI_ENERGY", ""), "none") == 0) {
		return AMDSMI_STATUS_NOT_SUPPORTED;
	}
	counts[i] += 1000000;
	*energy = counts[i];
	*resolution = 15.259f;
	*timestamp = counts[i];
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_activity(amdsmi_processor_handle h, amdsmi_engine_usage_t *u) {
	int i = gpu_of(h);
	if (i < 0) {
		return AMDSMI_STATUS_INVAL;
	}
	if (lost(i)) {
		return AMDSMI_STATUS_NOT_FOUND;
	}
	memset(u, 0, sizeof *u);
	u->gfx_activity = i == 2 ? 97 : 0, u->umc_activity = i == 2 ? 40 : 0;
	return AMDSMI_STATUS_SUCCESS;
}

// amdsmi_gpu_metrics_t up to indep_throttle_status (the same in 24.6.1 and 26.1.0); the
// fake then fills the rest of 26.1.0's larger structure (about 5 KiB) with 0xff, "N/A".
typedef struct {
	uint16_t structure_size;
	uint8_t format_revision, content_revision;
	uint16_t temperature_edge, temperature_hotspot, temperature_mem, temperature_vrgfx, temperature_vrsoc, temperature_vrmem;
	uint16_t average_gfx_activity, average_umc_activity, average_mm_activity;
	uint16_t average_socket_power;
	uint64_t energy_accumulator;
	uint64_t system_clock_counter;
	uint16_t average_gfxclk_frequency, average_socclk_frequency, average_uclk_frequency, average_vclk0_frequency,
		average_dclk0_frequency, average_vclk1_frequency, average_dclk1_frequency;
	uint16_t current_gfxclk, current_socclk, current_uclk, current_vclk0, current_dclk0, current_vclk1, current_dclk1;
	uint32_t throttle_status;
	uint16_t current_fan_speed, pcie_link_width, pcie_link_speed;
	uint32_t gfx_activity_acc, mem_activity_acc;
	uint16_t temperature_hbm[4];
	uint64_t firmware_timestamp;
	uint16_t voltage_soc, voltage_gfx, voltage_mem;
	uint64_t indep_throttle_status;
} metrics_head_t;

amdsmi_status_t amdsmi_get_gpu_metrics_info(amdsmi_processor_handle h, void *out) {
	int i = gpu_of(h);
	if (i < 0 || out == NULL) {
		return AMDSMI_STATUS_INVAL;
	}
	if (lost(i)) {
		return AMDSMI_STATUS_NOT_FOUND;
	}
	size_t total = new_layout() ? 5600 : 1400;
	memset(out, 0xff, total);
	metrics_head_t *m = out;
	m->structure_size = (uint16_t)total;
	m->format_revision = 1;
	m->content_revision = 5; // MI300X's table is v1.5 on ROCm 6.2
	const char *t = env("FAKE_AMDSMI_THROTTLE", "0");
	if (strcmp(t, "old") == 0) {
		m->content_revision = 2;
	} else {
		m->indep_throttle_status = strtoull(t, NULL, 16);
	}
	m->throttle_status = 0xdeadbeef; // ASIC-dependent bits benchctl must not read
	return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t st, const char **s) {
	switch (st) {
	case AMDSMI_STATUS_NO_PERM:
		*s = "AMDSMI_STATUS_NO_PERM - Permission Denied";
		return AMDSMI_STATUS_SUCCESS;
	case AMDSMI_STATUS_INIT_ERROR:
		*s = "AMDSMI_STATUS_INIT_ERROR - An error occurred when initializing internal data structures";
		return AMDSMI_STATUS_SUCCESS;
	case AMDSMI_STATUS_NOT_FOUND:
		*s = "AMDSMI_STATUS_NOT_FOUND - Device Not found";
		return AMDSMI_STATUS_SUCCESS;
	}
	*s = "AMDSMI_STATUS_UNKNOWN_ERROR - An unknown error occurred";
	return AMDSMI_STATUS_SUCCESS;
}
#endif
