package commands

import (
	"testing"
)

func TestMemory(t *testing.T) {
	for b, want := range map[uint64]string{0: "-", 512 << 20: "512 MiB", 192 << 30: "192 GiB", 81559 << 20: "79.6 GiB"} {
		if got := memory(b); got != want {
			t.Errorf("memory(%d) = %q, want %q", b, got, want)
		}
	}
}
