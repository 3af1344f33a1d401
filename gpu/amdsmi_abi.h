// amdsmi_abi.h: the part of AMD SMI's public header (amd_smi/amdsmi.h) that benchctl's
// binding calls, mirrored field by field. benchctl does not include amdsmi.h (ROCm is not
// installed where benchctl is built); it loads libamd_smi.so at run time (amdsmi_dl.go) and
// calls it through these declarations, so each layout here must be the library's byte for
// byte. Where a layout differs between library versions there is one typedef per version,
// named for it; the binding picks one from amdsmi_get_lib_version and refuses versions it
// has no typedef for.
//
// Sources, read from the ROCm/amdsmi repository's include/amd_smi/amdsmi.h:
//   v24_6: AMDSMI_LIB_VERSION 24.6.1 (year 24, major 6: ROCm 6.2)
//   v26:   AMDSMI_LIB_VERSION 26.1.0 (major 26: ROCm 7.x). From 25.x on the version has no
//          year and its major changes on every ABI break, so one typedef serves all of 26.x.
// The sizes and offsets asserted at the end were worked out by hand from those headers
// (x86-64 and aarch64 Linux: LP64, natural alignment) and are checked by the compiler.
#ifndef BENCHCTL_AMDSMI_ABI_H
#define BENCHCTL_AMDSMI_ABI_H

#include <stddef.h>
#include <stdint.h>

// amdsmi_status_t, amdsmi_clk_type_t, amdsmi_temperature_type_t and
// amdsmi_temperature_metric_t are C enums: int-sized, passed and returned like uint32_t.
typedef uint32_t bc_status_t;

#define BC_STATUS_SUCCESS 0           // AMDSMI_STATUS_SUCCESS
#define BC_STATUS_NOT_SUPPORTED 2     // AMDSMI_STATUS_NOT_SUPPORTED
#define BC_STATUS_OUT_OF_RESOURCES 15 // AMDSMI_STATUS_OUT_OF_RESOURCES (process list: more than fit)
#define BC_INIT_AMD_GPUS (1u << 1)    // AMDSMI_INIT_AMD_GPUS
#define BC_CLK_TYPE_GFX 0             // AMDSMI_CLK_TYPE_GFX (= AMDSMI_CLK_TYPE_SYS)
#define BC_CLK_TYPE_MEM 4             // AMDSMI_CLK_TYPE_MEM
#define BC_TEMP_TYPE_EDGE 0           // AMDSMI_TEMPERATURE_TYPE_EDGE
#define BC_TEMP_TYPE_HOTSPOT 1        // AMDSMI_TEMPERATURE_TYPE_HOTSPOT (= _JUNCTION)
#define BC_TEMP_CURRENT 0             // AMDSMI_TEMP_CURRENT

// amdsmi_bdf_t (24.6.1 and 26.1.0; 26.1.0 adds a named struct of the same bit fields to
// the union, which changes nothing in memory).
typedef union {
	struct {
		uint64_t function_number : 3;
		uint64_t device_number : 5;
		uint64_t bus_number : 8;
		uint64_t domain_number : 48;
	};
	uint64_t as_uint;
} bc_bdf_t;

// amdsmi_version_t, 24.6.1: year first.
typedef struct {
	uint32_t year;
	uint32_t major;
	uint32_t minor;
	uint32_t release;
	const char *build;
} bc_version_v24_t;

// amdsmi_version_t, 26.1.0 (and 25.x): no year. The binding reads only the first four
// 32-bit words of either layout, never the build pointer.
typedef struct {
	uint32_t major;
	uint32_t minor;
	uint32_t release;
	const char *build;
} bc_version_v26_t;

// amdsmi_vram_usage_t (24.6.1 and 26.1.0): MB (MiB).
typedef struct {
	uint32_t vram_total;
	uint32_t vram_used;
	uint32_t reserved[2];
} bc_vram_usage_t;

// amdsmi_power_cap_info_t (24.6.1 and 26.1.0): power in microwatts on bare-metal Linux.
typedef struct {
	uint64_t power_cap;
	uint64_t default_power_cap;
	uint64_t dpm_cap;
	uint64_t min_power_cap;
	uint64_t max_power_cap;
	uint64_t reserved[3];
} bc_power_cap_info_t;

// amdsmi_clk_info_t (24.6.1 and 26.1.0): MHz.
typedef struct {
	uint32_t clk;
	uint32_t min_clk;
	uint32_t max_clk;
	uint8_t clk_locked;
	uint8_t clk_deep_sleep;
	uint32_t reserved[4];
} bc_clk_info_t;

// amdsmi_asic_info_t, 24.6.1 (AMDSMI_256_LENGTH 256, AMDSMI_MAX_STRING_LENGTH 64,
// AMDSMI_NORMAL_STRING_LENGTH 32). No target_graphics_version yet.
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
} bc_asic_info_v24_6_t;

// amdsmi_asic_info_t, 26.1.0 (AMDSMI_MAX_STRING_LENGTH 256).
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
	uint64_t target_graphics_version; // UINT64_MAX: not supported
	uint32_t subsystem_id;
	uint32_t reserved[21];
} bc_asic_info_v26_t;

// amdsmi_driver_info_t, 24.6.1: three strings of AMDSMI_MAX_STRING_LENGTH (64).
typedef struct {
	char driver_version[64];
	char driver_date[64];
	char driver_name[64];
} bc_driver_info_v24_6_t;

// amdsmi_driver_info_t, 26.1.0: three strings of AMDSMI_MAX_STRING_LENGTH (256).
typedef struct {
	char driver_version[256];
	char driver_date[256];
	char driver_name[256];
} bc_driver_info_v26_t;

// One entry of amdsmi_fw_info_t's fw_info_list (24.6.1 and 26.1.0).
typedef struct {
	uint32_t fw_id; // amdsmi_fw_block_t
	uint64_t fw_version;
	uint64_t reserved[2];
} bc_fw_entry_t;

// amdsmi_fw_info_t, 24.6.1: AMDSMI_FW_ID__MAX is 79 (the last block is AMDSMI_FW_ID_DMCU, 78).
typedef struct {
	uint8_t num_fw_info;
	bc_fw_entry_t fw_info_list[79];
	uint32_t reserved[7];
} bc_fw_info_v24_6_t;

// amdsmi_fw_info_t, 26.1.0: AMDSMI_FW_ID__MAX is 80 (AMDSMI_FW_ID_PLDM_BUNDLE, 79, added).
typedef struct {
	uint8_t num_fw_info;
	bc_fw_entry_t fw_info_list[80];
	uint32_t reserved[7];
} bc_fw_info_v26_t;

// amdsmi_proc_info_t, 24.6.1: name and container_name of AMDSMI_NORMAL_STRING_LENGTH (32).
typedef struct {
	char name[32];
	uint32_t pid; // amdsmi_process_handle_t
	uint64_t mem; // bytes
	struct {
		uint64_t gfx;
		uint64_t enc;
		uint32_t reserved[12];
	} engine_usage;
	struct {
		uint64_t gtt_mem;
		uint64_t cpu_mem;
		uint64_t vram_mem;
		uint32_t reserved[10];
	} memory_usage;
	char container_name[32];
	uint32_t reserved[4];
} bc_proc_info_v24_6_t;

// amdsmi_proc_info_t, 26.1.0: strings of AMDSMI_MAX_STRING_LENGTH (256), two new counters.
typedef struct {
	char name[256];
	uint32_t pid;
	uint64_t mem;
	struct {
		uint64_t gfx;
		uint64_t enc;
		uint32_t reserved[12];
	} engine_usage;
	struct {
		uint64_t gtt_mem;
		uint64_t cpu_mem;
		uint64_t vram_mem;
		uint32_t reserved[10];
	} memory_usage;
	char container_name[256];
	uint32_t cu_occupancy;
	uint32_t evicted_time;
	uint32_t reserved[10];
} bc_proc_info_v26_t;

// amdsmi_power_info_t, 24.6.1: every member 32 bits; socket power in W on bare-metal
// Linux (MI300 fills current_socket_power, earlier parts average_socket_power).
typedef struct {
	uint32_t current_socket_power;
	uint32_t average_socket_power;
	uint32_t gfx_voltage;
	uint32_t soc_voltage;
	uint32_t mem_voltage;
	uint32_t power_limit;
	uint32_t reserved[11];
} bc_power_info_v24_6_t;

// amdsmi_power_info_t, 26.1.0: socket_power (64 bits) first, voltages widened to 64 bits;
// power in W on bare-metal Linux; unsupported members are UINT32_MAX (or UINT64_MAX).
typedef struct {
	uint64_t socket_power;
	uint32_t current_socket_power;
	uint32_t average_socket_power;
	uint64_t gfx_voltage;
	uint64_t soc_voltage;
	uint64_t mem_voltage;
	uint32_t power_limit;
	uint64_t reserved[18];
} bc_power_info_v26_t;

// amdsmi_engine_usage_t (24.6.1 and 26.1.0): activity in percent.
typedef struct {
	uint32_t gfx_activity;
	uint32_t umc_activity;
	uint32_t mm_activity;
	uint32_t reserved[13];
} bc_engine_usage_t;

// The head of amdsmi_gpu_metrics_t, the same in 24.6.1 and 26.1.0 up to
// indep_throttle_status (AMDSMI_NUM_HBM_INSTANCES is 4 in both); what follows differs
// (26.x adds residency counters and per-partition xcp_stats, about 5 KiB in all), so the
// binding declares only this head and reads into a buffer of BC_GPU_METRICS_BUFFER bytes.
typedef struct {
	uint16_t structure_size;   // common_header (the driver's gpu_metrics table header)
	uint8_t format_revision;
	uint8_t content_revision;
	uint16_t temperature[6];   // edge, hotspot, mem, vrgfx, vrsoc, vrmem (°C)
	uint16_t average_activity[3];
	uint16_t average_socket_power;
	uint64_t energy_accumulator;
	uint64_t system_clock_counter;
	uint16_t average_clocks[7];
	uint16_t current_clocks[7];
	uint32_t throttle_status;  // ASIC-dependent bits
	uint16_t current_fan_speed;
	uint16_t pcie_link_width;
	uint16_t pcie_link_speed;
	uint32_t gfx_activity_acc; // v1.1
	uint32_t mem_activity_acc;
	uint16_t temperature_hbm[4];
	uint64_t firmware_timestamp; // v1.2
	uint16_t voltage[3];         // v1.3: soc, gfx, mem
	uint64_t indep_throttle_status; // v1.3: the kernel's ASIC-independent SMU_THROTTLER_* bits
} bc_gpu_metrics_head_t;

#define BC_GPU_METRICS_BUFFER 16384 // 26.1.0's whole structure is under 5 KiB

_Static_assert(sizeof(bc_bdf_t) == 8, "amdsmi_bdf_t");
_Static_assert(offsetof(bc_gpu_metrics_head_t, energy_accumulator) == 24 && offsetof(bc_gpu_metrics_head_t, throttle_status) == 68 &&
	offsetof(bc_gpu_metrics_head_t, gfx_activity_acc) == 80 && offsetof(bc_gpu_metrics_head_t, firmware_timestamp) == 96 &&
	offsetof(bc_gpu_metrics_head_t, indep_throttle_status) == 112, "amdsmi_gpu_metrics_t head");
_Static_assert(sizeof(bc_power_info_v24_6_t) == 68, "amdsmi_power_info_t 24.6.1");
_Static_assert(sizeof(bc_power_info_v26_t) == 192 && offsetof(bc_power_info_v26_t, current_socket_power) == 8 &&
	offsetof(bc_power_info_v26_t, power_limit) == 40, "amdsmi_power_info_t 26.1.0");
_Static_assert(sizeof(bc_engine_usage_t) == 64, "amdsmi_engine_usage_t");
_Static_assert(sizeof(bc_version_v24_t) == 24 && sizeof(bc_version_v26_t) == 24, "amdsmi_version_t");
_Static_assert(sizeof(bc_vram_usage_t) == 16, "amdsmi_vram_usage_t");
_Static_assert(sizeof(bc_power_cap_info_t) == 64, "amdsmi_power_cap_info_t");
_Static_assert(sizeof(bc_clk_info_t) == 32 && offsetof(bc_clk_info_t, reserved) == 16, "amdsmi_clk_info_t");
_Static_assert(sizeof(bc_asic_info_v24_6_t) == 448 && offsetof(bc_asic_info_v24_6_t, device_id) == 328 &&
	offsetof(bc_asic_info_v24_6_t, asic_serial) == 340, "amdsmi_asic_info_t 24.6.1");
_Static_assert(sizeof(bc_asic_info_v26_t) == 896 && offsetof(bc_asic_info_v26_t, device_id) == 520 &&
	offsetof(bc_asic_info_v26_t, asic_serial) == 532 && offsetof(bc_asic_info_v26_t, target_graphics_version) == 800,
	"amdsmi_asic_info_t 26.1.0");
_Static_assert(sizeof(bc_driver_info_v24_6_t) == 192 && sizeof(bc_driver_info_v26_t) == 768, "amdsmi_driver_info_t");
_Static_assert(sizeof(bc_fw_entry_t) == 32, "amdsmi_fw_info_t entry");
_Static_assert(sizeof(bc_fw_info_v24_6_t) == 2568 && offsetof(bc_fw_info_v24_6_t, fw_info_list) == 8, "amdsmi_fw_info_t 24.6.1");
_Static_assert(sizeof(bc_fw_info_v26_t) == 2600, "amdsmi_fw_info_t 26.1.0");
_Static_assert(sizeof(bc_proc_info_v24_6_t) == 224 && offsetof(bc_proc_info_v24_6_t, mem) == 40 &&
	offsetof(bc_proc_info_v24_6_t, memory_usage) == 112 && offsetof(bc_proc_info_v24_6_t, container_name) == 176,
	"amdsmi_proc_info_t 24.6.1");
_Static_assert(sizeof(bc_proc_info_v26_t) == 704 && offsetof(bc_proc_info_v26_t, mem) == 264 &&
	offsetof(bc_proc_info_v26_t, memory_usage) == 336 && offsetof(bc_proc_info_v26_t, container_name) == 400,
	"amdsmi_proc_info_t 26.1.0");

#endif
