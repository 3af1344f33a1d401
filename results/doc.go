// Package results turns a job folder into one trustworthy table. It reads every node's
// status.json and result files (a benchmark's CSV, or the `performance:` line of its log),
// picks the best CSV per benchmark, aggregates the values the nodes report for the same row
// (min, max, mean, median, stdev, cv), and writes perf.csv (madengine's columns first),
// summary.json and a self-contained report.html into the job folder. It also appends to a
// user's perf.csv under a lock and compares two perf.csv files.
//
// Node folders are streamed: a few workers read one folder each, and the aggregator keeps
// only the current best CSV per benchmark, counters, one (rank, value) pair per node per
// row key (for the median and the report's bars), a compact candidate record and a byte of
// state per node per benchmark. Nothing here prints; callers get values and writers.
package results
