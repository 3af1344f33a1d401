package image

import "github.com/benchctl/benchctl/internal/progress"

// Progress is a report on long work: a build step, or bytes moved out of a total.
type Progress = progress.Report

// ProgressFunc receives progress reports. It may be nil. Byte reports come at most every
// progress.Every, plus a final one; the caller decides how to show them.
type ProgressFunc = progress.Func
