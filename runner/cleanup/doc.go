// Package cleanup finds a job's containers on a node's engine by their labels and removes
// them, and records the end of a node whose benchctl could not (its status.json still says
// running): `benchctl cleanup` in a Slurm epilog or by hand, and runner's removal of the
// containers an earlier attempt left.
package cleanup
