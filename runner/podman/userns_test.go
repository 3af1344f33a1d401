package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/image"
)

// A rootless Podman engine maps a container user other than root to a subordinate id:
// keep-id maps the host user to it instead. Root, other engines, and names benchctl cannot
// turn into a uid get no mode (a name gets a hint saying what to do).
func TestKeepIDMode(t *testing.T) {
	tests := []struct {
		id         image.Identity
		user, want string
		hint       string
	}{
		{podmanRootless, "1000", "keep-id:uid=1000", ""},
		{podmanRootless, "1000:1000", "keep-id:uid=1000,gid=1000", ""},
		{podmanRootless, "65534:0", "keep-id:uid=65534,gid=0", ""},
		{podmanRootless, "1000:video", "keep-id:uid=1000", `group "video" is a name`},
		{podmanRootless, "bench", "", `user "bench" is a name`},
		{podmanRootless, "bench:1000", "", `user "bench:1000" is a name`},
		{podmanRootless, "4294967295", "", "is a name"}, // (uid_t)-1 is no uid
		{podmanRootless, "99999999999", "", "is a name"},
		{podmanRootless, "-1", "", "is a name"},
		{podmanRootless, "", "", ""},
		{podmanRootless, "root", "", ""},
		{podmanRootless, "0", "", ""},
		{podmanRootless, "0:1000", "", ""},
		{podmanRootful, "1000:1000", "", ""},
		{dockerEngine, "1000:1000", "", ""},
		{image.Identity{Kind: image.KindDocker, Rootless: true}, "1000", "", ""}, // rootless Docker has no keep-id
	}
	for _, tt := range tests {
		mode, hint := KeepIDMode(tt.id, tt.user)
		if mode != tt.want || (tt.hint == "") != (hint == "") || !strings.Contains(hint, tt.hint) {
			t.Errorf("KeepIDMode(%s, %q) = %q, %q; want %q, a hint with %q", tt.id.Kind, tt.user, mode, hint, tt.want, tt.hint)
		}
		if hint != "" && !strings.Contains(hint, "container.user") {
			t.Errorf("the hint %q does not say what to set", hint)
		}
	}
}

// accountEngine is an engine whose image has the files in files (path -> tar entry), read
// through a created container it records, and removes.
type accountEngine struct {
	files   map[string]*tar.Header
	bodies  map[string]string
	created []client.ContainerCreateOptions
	removed []string
	copyErr error
}

func (e *accountEngine) ContainerCreate(_ context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	e.created = append(e.created, o)
	return client.ContainerCreateResult{ID: "acct"}, nil
}

func (e *accountEngine) CopyFromContainer(_ context.Context, id string, o client.CopyFromContainerOptions) (client.CopyFromContainerResult, error) {
	if e.copyErr != nil {
		return client.CopyFromContainerResult{}, e.copyErr
	}
	h, ok := e.files[o.SourcePath]
	if !ok {
		return client.CopyFromContainerResult{}, fmt.Errorf("no such file %s: %w", o.SourcePath, cerrdefs.ErrNotFound)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := e.bodies[o.SourcePath]
	hh := *h
	if hh.Typeflag == tar.TypeReg {
		hh.Size = int64(len(body))
	}
	if err := tw.WriteHeader(&hh); err != nil {
		return client.CopyFromContainerResult{}, err
	}
	if hh.Typeflag == tar.TypeReg {
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	return client.CopyFromContainerResult{Content: io.NopCloser(&buf)}, nil
}

func (e *accountEngine) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	e.removed = append(e.removed, id)
	return client.ContainerRemoveResult{}, nil
}

// A named or group-less container user is put in numbers from the image's /etc/passwd and
// /etc/group, as the runtime resolves it at start, through a container that is never
// started and always removed; what cannot be resolved stays as it was (keepIDMode warns).
func TestNumericUser(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/sh\n# a comment\nbroken line\n" + strings.Repeat("x", 6000) + "\n" +
		"bench:x:1000:1001:Bench:/home/bench:/bin/sh\nnogroup:x:1002:notanumber::/:/bin/sh\nbig:x:4294967295:0::/:/bin/sh\n"
	group := "root:x:0:\nvideo:x:44:bench\nbench:x:1001:\n"
	reg := func(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644} }
	img := func() *accountEngine {
		return &accountEngine{files: map[string]*tar.Header{"/etc/passwd": reg("passwd"), "/etc/group": reg("group")},
			bodies: map[string]string{"/etc/passwd": passwd, "/etc/group": group}}
	}
	labels := map[string]string{LabelJob: "j1"}
	for _, tt := range []struct{ user, want string }{
		{"bench", "1000:1001"},
		{"bench:video", "1000:44"},
		{"bench:2000", "1000:2000"},
		{"1000", "1000:1001"}, // a uid without a group takes its passwd entry's
		{"1500", "1500"},      // a uid passwd does not know: no group to map
		{"bench:nosuch", "1000"},
		{"nosuch", "nosuch"},
		{"nogroup", "1002"},
		{"big", "big"}, // (uid_t)-1 is no uid
	} {
		e := img()
		if got := NumericUser(context.Background(), e, "img:1", tt.user, labels); got != tt.want {
			t.Errorf("NumericUser(%q) = %q, want %q", tt.user, got, tt.want)
		}
		if len(e.created) != 1 || e.created[0].Config.Image != "img:1" || e.created[0].Config.Labels[LabelJob] != "j1" || len(e.removed) != 1 {
			t.Errorf("%q: created %+v, removed %v; want one labelled helper container, removed", tt.user, e.created, e.removed)
		}
	}
	// Nothing is asked of the engine where the user is root or already in numbers.
	for _, u := range []string{"", "root", "0", "0:0", "1000:1000"} {
		e := img()
		if got := NumericUser(context.Background(), e, "img:1", u, labels); got != u || len(e.created) != 0 {
			t.Errorf("NumericUser(%q) = %q with %d containers, want it unchanged and none", u, got, len(e.created))
		}
	}
	// Files that are not regular files of a sane size, or an engine that fails the copy:
	// unresolved, and the helper still removed. No /etc/group: the passwd's group is kept.
	link := img()
	link.files["/etc/passwd"] = &tar.Header{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}
	fifo := img()
	fifo.files["/etc/passwd"] = &tar.Header{Name: "passwd", Typeflag: tar.TypeFifo}
	failing := img()
	failing.copyErr = errors.New("engine gone")
	noGroup := img()
	delete(noGroup.files, "/etc/group")
	for name, tt := range map[string]struct {
		e          *accountEngine
		user, want string
	}{"link": {link, "bench", "bench"}, "fifo": {fifo, "bench", "bench"}, "engine fails": {failing, "bench", "bench"},
		"no /etc/group": {noGroup, "bench", "1000:1001"}} {
		if got := NumericUser(context.Background(), tt.e, "img:1", tt.user, labels); got != tt.want || len(tt.e.removed) != 1 {
			t.Errorf("%s: NumericUser(%q) = %q (removed %v), want %q and the helper removed", name, tt.user, got, tt.e.removed, tt.want)
		}
	}
	// An engine that cannot copy files (a fake without the calls) leaves the user alone.
	if got := NumericUser(context.Background(), struct{}{}, "img:1", "bench", labels); got != "bench" {
		t.Errorf("no file access: %q", got)
	}
}
