// Package slurm understands Slurm from the outside: the environment of a task (hostlists,
// job id, rank, world), and, for submit and collect, job scripts and job state
// (Scheduler, the jobdir.Scheduler that jobs, submit --wait and collect ask).
package slurm
