// Package gpu has one job: say which GPUs this node has, as one typed Inventory for NVIDIA
// and AMD, and pick the ones a job may use. It also says what they are doing now
// (Snapshot), for doctor's "GPU busy" check and a failed benchmark's diagnostics, and
// samples their telemetry while a benchmark runs (OpenSampler).
//
// # Sources
//
// Each sits behind the smallest interface the code needs so tests can replace it:
//
//   - NVIDIA, cgo builds: NVML through github.com/NVIDIA/go-nvml, which dlopens
//     libnvidia-ml.so.1 at run time (the binary builds and starts without a driver; no
//     library means "not found"). Tests drive it with go-nvml's DGX H100 mock (WithNVML).
//   - NVIDIA, CGO_ENABLED=0 builds: `nvidia-smi --query-gpu=... --format=csv` (run with an
//     argument list, never a shell string) and its CSV parsed. No Snapshot.
//   - AMD, in this order unless Options.AMDSource names one (`benchctl gpus --source`):
//     1. amdsmi: libamd_smi.so, ROCm's AMD SMI library, loaded at run time by this
//     package's own binding (amdsmi*.go, below);
//     2. sysfs: the KFD topology (/sys/class/kfd/kfd/topology/nodes), read under a root
//     that tests point at recorded trees (tests/fixtures/sysfs);
//     3. amd-smi: `amd-smi list --json` and `amd-smi static --json`.
//     The inventory's Source says which answered, Library which library file and version,
//     and Notes why an earlier source was passed over ("amdsmi not used: ..."). With a
//     recorded tree (SysfsRoot other than /) only the tree is read, unless AMDSMIPath
//     names a library to join with it (the tests do).
//
// # Telemetry
//
// OpenSampler (telemetry_open.go) returns a Sampler for the selected GPUs; each Sample is
// a Reading per GPU: power (W), the energy counter (J), graphics/SM and memory clocks
// (MHz), temperature (°C), utilisation (%), memory in use (bytes) and the throttle
// reasons. A fact a source does not give is nil and listed once in Unavailable (per GPU
// and field, with why); a GPU that stops answering is a Reading with Err, listed once
// with field "gpu". Every Sample runs the source on its own goroutine and waits no longer
// than its context: a read that does not return leaves later Samples answering at once
// with every GPU in error, a read that panics (a mock without the method) is the same,
// never a crash. A Sample whose context was cancelled (the caller stopping) returns every
// GPU in error without recording it; one whose deadline passed records it. Sources:
//
//   - nvml (telemetry_nvml.go, cgo builds): GetPowerUsage (mW), GetTotalEnergyConsumption
//     (mJ since the driver loaded, a 64-bit counter; NOT_SUPPORTED before Volta),
//     GetClockInfo(CLOCK_SM, CLOCK_MEM), GetTemperature(TEMPERATURE_GPU),
//     GetUtilizationRates().Gpu, GetMemoryInfo().Used, GetCurrentClocksEventReasons (and
//     GetCurrentClocksThrottleReasons, the same bits, on a driver older than 535 that
//     lacks it). ERROR_GPU_IS_LOST, UNINITIALIZED and DRIVER_NOT_LOADED mean the GPU is
//     gone. Reasons map: SW power cap (0x4) and HW power brake (0x80) to power; SW (0x20)
//     and HW (0x40) thermal slowdown to thermal; HW slowdown (0x8) without HW thermal or
//     power brake, and the reliability policy (0x400), to reliability; applications
//     clocks (0x2), sync boost (0x10), display clock (0x100) and board limit (0x200) to
//     other; GPU idle (0x1) to nothing. A CGO_ENABLED=0 build has no NVIDIA telemetry
//     (an error wrapping ErrNotFound): nvidia-smi, a process per sample, would cost tens
//     of milliseconds of CPU each time.
//   - amdsmi (telemetry_amdsmi.go): one session (amdsmi_init .. amdsmi_shut_down) from
//     OpenSampler to Close; each Sample holds the library only for its reads, waiting
//     (no longer than its context) while a snapshot holds it. Optional entry points, each
//     layout checked against amdsmi.h 24.6.1 and 26.1.0 (amdsmi_abi.h):
//     amdsmi_get_power_info (socket power in W: 26.x's socket_power, else
//     current_socket_power (MI300), else average_socket_power; UINT32_MAX, UINT64_MAX,
//     0xFFFF and 0 are "not given"), amdsmi_get_energy_count (a 64-bit accumulator times
//     its counter_resolution in µJ, 15.259 µJ on MI200/MI300; the driver's own counter
//     is 64 bits), amdsmi_get_gpu_activity (gfx_activity, %), with amdsmi_get_clock_info,
//     amdsmi_get_temp_metric and amdsmi_get_gpu_vram_usage (MB: MiB resolution) as above.
//     AMDSMI_STATUS_NOT_FOUND, INVAL (a handle that no longer names a GPU) and NOT_INIT
//     mean the GPU is gone. Throttle reasons come from amdsmi_get_gpu_metrics_info's
//     indep_throttle_status (the kernel's ASIC-independent SMU_THROTTLER_* bits, gpu
//     metrics table v1.3 and later; the ASIC-dependent throttle_status is not read). The
//     structure differs between 24.6 and 26.x after that field, so only its head is
//     declared (bc_gpu_metrics_head_t, identical in both) and the library writes into a
//     16 KiB zeroed buffer (26.1.0's whole structure is under 5 KiB). Mapping: PPT0-3,
//     SPL, FPPT, SPPT, SPPT_APU (bits 0-7) to power; TEMP_* (GPU, core, memory, edge, hotspot, SoC, VR, liquid; bits 32-43) to
//     thermal; TDC/EDC current limits (16-22), APCC (23), VRHOT (44-45), PROCHOT (46-47),
//     PPM (56) and FIT (57) to reliability; a bit the kernel does not define to other.
//   - sysfs (telemetry_hwmon.go): the amdgpu hwmon folder beside the GPU's PCI device
//     (<root>/sys/bus/pci/devices/<pci>/hwmon/hwmon<N>, the folder
//     /sys/class/drm/card<N>/device/hwmon is), matched by PCI address:
//     power1_average, else power1_input (µW); energy1_input (µJ, where the part has it;
//     not on MI300X); temp<N>_input labelled junction, else edge (m°C); freq<N>_input
//     labelled sclk and mclk (Hz); and device/gpu_busy_percent and
//     device/mem_info_vram_used (bytes). No throttle status. Files are found at
//     OpenSampler; each read opens non-blocking, must be a regular file and is at most
//     64 bytes, so a FIFO or an oversized file is an unavailable fact, never a hang. The
//     device folder gone means the GPU is gone.
//
// EnergyJ is the raw counter in joules: it may wrap or restart (a driver reload, a GPU
// reset); the caller handles that. OpenSampler picks the source by the inventory's
// vendor and Options.AMDSource; for AMD, auto tries the library (on the live machine, or
// with AMDSMIPath) and falls back to hwmon, saying why as the first Unavailable (GPU -1,
// field "source"). BenchmarkSample* measure one Sample of eight GPUs through each source.
//
// Select applies a Slurm allocation (SLURM_STEP_GPUS / SLURM_JOB_GPUS) or the vendor's
// visibility variable to an Inventory. Nothing here prints; callers decide what to show.
//
// # The AMD SMI binding
//
// No Go module for AMD SMI can be fetched here, so the binding is this package's. It uses
// cgo with dlopen/dlsym (amdsmi_dl.go), not github.com/ebitengine/purego: the project
// already builds with cgo for go-nvml and gcc is on every machine that builds it, so cgo
// adds no module (DESIGN.md asks before adding libraries) and no new build requirement;
// and the structures are declared in C (amdsmi_abi.h), where the compiler lays them out
// as libamd_smi's own compiler did (amdsmi_bdf_t is a union of bit fields, which Go
// cannot declare) and _Static_assert checks each size and key offset against numbers
// worked out from amdsmi.h. A CGO_ENABLED=0 build has no binding (amdsmi_nocgo.go) and
// reads AMD GPUs from sysfs. The binary never links libamd_smi: without ROCm it starts
// and runs as before.
//
// Entry points, with their amdsmi.h signatures. Required (a library lacking one is not
// used, and the note names the symbol): amdsmi_init(uint64_t flags; AMDSMI_INIT_AMD_GPUS),
// amdsmi_shut_down, amdsmi_get_lib_version, amdsmi_get_socket_handles,
// amdsmi_get_processor_handles, amdsmi_get_gpu_device_bdf, amdsmi_get_gpu_asic_info,
// amdsmi_get_gpu_vram_usage. Optional (a lacking library answers without that fact, and a
// note names it): amdsmi_get_gpu_compute_partition, amdsmi_get_gpu_memory_partition,
// amdsmi_get_power_cap_info (sensor 0), amdsmi_get_clock_info (GFX, MEM),
// amdsmi_get_temp_metric (HOTSPOT, else EDGE; CURRENT), amdsmi_get_fw_info,
// amdsmi_get_gpu_driver_info, amdsmi_get_gpu_process_list,
// amdsmi_status_code_to_string. Clocks come from amdsmi_get_clock_info (current and
// maximum MHz in one call) rather than amdsmi_get_clk_freq (a table of levels in Hz).
// Units as the library gives them: VRAM in MB (MiB: an MI300X has 196592), power in
// microwatts, temperature in degrees Celsius (the library divides the driver's
// millidegrees), clocks in MHz, target_graphics_version as the target's digits in hex
// (0x942 is gfx942).
//
// Versions. The structures changed between AMD SMI releases (strings grew from 32/64 to
// 256 bytes, fields were added, amdsmi_version_t lost its year), so after amdsmi_init the
// binding reads amdsmi_get_lib_version and uses the layouts for that version, and refuses
// any other before reading a structure: the library is then "not used" and sysfs answers.
// Known, each read from ROCm/amdsmi's include/amd_smi/amdsmi.h: 24.6 (checked against
// 24.6.1; ROCm 6.2; it has no target_graphics_version, so the architecture comes from the
// KFD join) and 26.x (checked against 26.1.0; ROCm 7.x, whose major changes with every
// ABI break). Not known yet, so refused: 24.5 (ROCm 6.1), 24.7 (ROCm 6.3), 25.x (ROCm
// 6.4), 27 and later; adding one means checking its amdsmi.h and adding its typedefs.
//
// Safety. Only a regular file is passed to dlopen (a named pipe would block it; a folder
// or a pipe in the way is an error naming it, never a hang). Each structure is read into
// a zeroed buffer 4 KiB larger than the layout, so a library whose structure grew cannot
// write past it. A library file is loaded once and never unloaded (it starts threads and
// keeps C++ state). amdsmi_init/amdsmi_shut_down are process-wide, so one session runs at
// a time; each is bounded by its context and 30 s, and a call that does not come back is
// left behind with an error rather than holding the caller.
//
// Numbering. ROCR_VISIBLE_DEVICES counts KFD topology nodes, and amd-smi's own order need
// not be that, so the library's GPUs are joined on their PCI address with the KFD
// topology for Index, UUID (KFD unique_id), render node and NUMA node; where the topology
// lists other GPUs (or none), the library's order stands and a note says so.
//
// # Fixtures and where they came from
//
// tests/fixtures/sysfs (MI300X, MI250X) were generated, not copied from a machine; its
// README says how. testdata/fake_amdsmi.c is a stand-in libamd_smi.so written from
// amdsmi.h 24.6.1 and 26.1.0 (an 8 x MI300X node: gfx942, SPX or CPX, NPS1, processes on
// one GPU), compiled by the tests with the system cc. No machine with a GPU was at hand
// when the binding was written: no `benchctl gpus -o json` or `benchctl doctor` output
// recorded on a real MI300X (ROCm 6.2 or 7.x) or DGX H100 is checked in yet; recording
// both, and checking the binding against a real libamd_smi, is still to be done.
package gpu
