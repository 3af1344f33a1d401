package enginekind

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct {
		platform   string
		components []string
		kind, name string
	}{
		{"linux/amd64/debian-12", []string{"Podman Engine"}, Podman, "Podman Engine"},
		{"Podman Engine", nil, Podman, "Podman Engine"},
		{"Docker Engine - Community", []string{"Engine", "containerd"}, Docker, "Docker Engine - Community"},
		{"", []string{"Engine"}, Docker, "Docker Engine"},
		{"", nil, Docker, "Docker Engine"},
	} {
		if k, n := Of(c.platform, c.components...); k != c.kind || n != c.name {
			t.Errorf("%q %v: %s %q, want %s %q", c.platform, c.components, k, n, c.kind, c.name)
		}
	}
}
