// Package compare judges jobs against each other: two perf.csv or two jobs row by row
// over their trials (Compare, CompareSources), a job against its reference, last or best
// (Against, Check, references), a job's rows over its past (History), and writes what it
// found (a table, markdown, CSV, JSON, JUnit, OpenMetrics).
package compare
