// Package gpu has one job: say which GPUs this node has, as one typed Inventory for NVIDIA
// and AMD, and pick the ones a job may use.
//
// Sources, each behind the smallest interface the code needs so tests can replace it:
//
//   - NVIDIA, cgo builds: NVML through github.com/NVIDIA/go-nvml, which dlopens
//     libnvidia-ml.so.1 at run time (the binary builds and starts without a driver; no
//     library means "not found"). Tests drive it with go-nvml's DGX H100 mock.
//   - NVIDIA, CGO_ENABLED=0 builds: `nvidia-smi --query-gpu=... --format=csv` (run with an
//     argument list, never a shell string) and its CSV parsed.
//   - AMD, default: the KFD topology in sysfs (/sys/class/kfd/kfd/topology/nodes), read under
//     a root directory that tests point at recorded trees (tests/fixtures/sysfs).
//   - AMD, on request (Options.AMDSource = "amd-smi"): `amd-smi list --json` and
//     `amd-smi static --json`. The AMD SMI Go bindings that DESIGN.md mentions behind an
//     `amdsmi` build tag are NOT implemented: no Go module for them could be fetched from
//     the module proxy when this was written, so there is no `amdsmi` tag and no "amdsmi"
//     source yet; the amd-smi CLI is the stand-in.
//
// Select applies a Slurm allocation (SLURM_STEP_GPUS / SLURM_JOB_GPUS) or the vendor's
// visibility variable to an Inventory. Nothing here prints; callers decide what to show.
package gpu
