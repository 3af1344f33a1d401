// Package report is report.html: one self-contained page of a collected job, drawn from
// its View (the summary, and the job's past that collect read: the trend and the
// comparison with a reference), with its charts, failure excerpts, telemetry and
// experiment tables.
package report
