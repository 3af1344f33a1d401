// Package jobdir owns the job folder, the contract between every node of a job and the
// login node: every path under $BENCHCTL_SHARED_DIR/jobs, and the schemas of the files in it.
//
//	jobs/<id>[.<attempt>]/                     Dir (attempt n > 0 after the n-th requeue)
//	  job.json                                 Job, written by rank 0
//	  .barrier-secret                          the job channel's secret (0600), rank 0
//	  barrier.addr, barrier.addr.<rank>        where rank 0 (and each relay) listens
//	  perf.csv, summary.json, report.html      written by collect
//	  sbatch.out, sbatch.err                   the job script's own output (benchctl submit)
//	  nodes/<rank>-<host>/                     NodeDir, written by that node only
//	    status.json                            Status
//	    node.json                              NodeRecord: what the node was (written before it runs)
//	    <benchmark>.log                        the container's output
//	    results/<benchmark>/                   the container's results folder
//	    diagnostics/<benchmark>/               captured on failure
//	jobs/.submit/                              scripts and secrets of benchctl submit
//	.doctor/[<id>[.<attempt>]/]rank-<rank>      benchctl doctor's markers (Layout.Doctor)
//	.doctor/<id>[.<attempt>]/rank-<rank>.json   and node records, compared by rank 0
//
// Layout computes every path; nobody else joins them. NodeDisplay is a node folder's path
// as collect shows it ("nodes/<rank>-<host>/…"); diagnostics' report.json and summary.txt
// are named here too. jobdirtest writes job folders for tests. The image cache
// (cache/images) is image's: image.CacheLayout. Read and Write of each schema are
// here too: writes are atomic (a reader sees the old file or the new one), and reads never
// block on a FIFO, never follow a link out of the folder, and are bounded in size
// (internal/safefile), because containers write into this folder.
//
// runner writes the folder and results reads it; neither imports the other.
//
// Scheduler is the batch system as the job list (Overview), a followed job (Follow) and
// collect ask it; slurm implements it. RemoveSubmittedWhenEnded is the one rule for a
// submission's secret at the job's end: gone once the scheduler says the job ended.
package jobdir
