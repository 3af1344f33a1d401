// Package progress is how long work below cmd reports how far it got: a Report per step
// or per throttled count of bytes, handed to a Func the caller chose (cmd decides between
// a bar and a log line; the packages that report never print). image and fanout both count
// bytes with a Counter; image names the types image.Progress and image.ProgressFunc.
package progress
