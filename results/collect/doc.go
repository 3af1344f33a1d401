// Package collect is the collect command's work on a job folder: Collect aggregates the
// nodes (results), judges the job against its past (compare), writes perf.csv, summary.json
// and report.html (report), and appends perf.csv's rows where asked. It also holds the one
// table of export formats (export.go) that collect, compare and history print with.
package collect
