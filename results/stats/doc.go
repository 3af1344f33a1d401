// Package stats is the numbers of benchctl's results: the spread of a row over nodes
// (Stats), the median of a row's trials with its interval and outliers (TrialStats), a
// scaling study's speedup and efficiency (Scaling), and the rank test that judges two
// jobs' trials (MannWhitney). It knows nothing of jobs, files or reports.
package stats
