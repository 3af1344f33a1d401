// Package results turns a job folder into one trustworthy table. It reads every node's
// status.json and result files (a benchmark's CSV, or the `performance:` line of its log),
// picks the best CSV per benchmark, aggregates the values the nodes report for the same row
// (min, max, mean, median, stdev, cv) into a Summary, and encodes perf.csv (madengine's
// columns first) and summary.json. Its sibling rooms do the rest: results/collect writes
// them and report.html into the job folder and appends to a user's perf.csv, results/report
// draws report.html, results/compare compares jobs and reads their history, and
// results/stats is the numbers.
//
// Node folders are streamed: a few workers read one folder each, and the aggregator keeps
// only the current best CSV per benchmark, counters, one (rank, value) pair per node per
// row key (for the median and the report's bars), a compact candidate record and a byte of
// state per node per benchmark. Nothing here prints; callers get values and writers.
package results
