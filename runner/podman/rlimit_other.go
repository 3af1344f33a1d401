//go:build !linux

package podman

// hostLimits: the limits are read on Linux only.
func hostLimits() map[string]uint64 { return map[string]uint64{} }

// canRaiseLimits: taken as allowed where it cannot be asked (Podman runs on Linux).
func canRaiseLimits() bool { return true }
