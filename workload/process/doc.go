// Package process is the workload.Runtime without a container engine: each benchmark is a
// child process of this benchctl, in a process group of its own, run from its working
// folder with the environment, the limits and the GPU visibility its spec gives it. It is
// for nodes where no engine can be reached (bare metal with modules, and benchctl inside a
// container someone else started: pyxis, enroot, Apptainer, a Kubernetes pod).
//
// Every process carries a marker benchctl controls in its environment (BENCHCTL_PROCESS,
// its name, and BENCHCTL_LABELS, its labels), never its program's name: List finds a job's
// processes by it, also those a benchctl that crashed left, so that cleanup ends them.
// Stop and Remove signal the whole group, so what a benchmark started ends with it.
//
// A spec's limits are set on the child before its program runs: the child is this
// program again, which (in internal/procshim's init, among the first of the binary's) sets
// them and execs the benchmark's program. A spec without limits is started as its own
// program: a start of benchctl costs milliseconds.
package process
