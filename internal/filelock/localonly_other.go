//go:build !linux

package filelock

// LocalOnly reports whether flock on dir's filesystem locks on this machine only; it is
// detected on Linux only.
func LocalOnly(string) (bool, string) { return false, "" }
