// Package runner runs a benchmark job on one node: it works out the node's place in the
// job (rank, world, master), chooses its GPUs, meets the other nodes on the job channel
// (jobchan), has package distribution get every image of the job onto the node's engine
// (one call: distribution.Lead on rank 0, Follow elsewhere, through the job channel's ends
// and a reporter that writes status.json and job.json), runs the benchmark containers and
// leaves a status file whatever happens.
package runner
