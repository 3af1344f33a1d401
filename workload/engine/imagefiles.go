package engine

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// ImageFilesAPI is what reading files of an image asks of the engine: a container created
// (never started) to copy them out of, then removed. *client.Client has it.
type ImageFilesAPI interface {
	ContainerCreate(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	CopyFromContainer(ctx context.Context, id string, opts client.CopyFromContainerOptions) (client.CopyFromContainerResult, error)
	ContainerRemove(ctx context.Context, id string, opts client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
}

var _ ImageFilesAPI = (*client.Client)(nil)

// maxAccountFile bounds /etc/passwd and /etc/group read from an image.
const maxAccountFile = 4 << 20

// AccountFiles reads /etc/passwd and /etc/group of the image ref through a container created
// for it and removed after (an image without one of them gives an empty body).
func AccountFiles(ctx context.Context, eng ImageFilesAPI, ref string, labels map[string]string) (passwd, group []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := eng.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: ref, Entrypoint: []string{"/benchctl-never-started"}, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer rcancel()
		_, _ = eng.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}()
	read := func(path string) ([]byte, error) {
		res, err := eng.CopyFromContainer(ctx, c.ID, client.CopyFromContainerOptions{SourcePath: path})
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		defer res.Content.Close()
		tr := tar.NewReader(res.Content)
		h, err := tr.Next()
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg || h.Size > maxAccountFile {
			return nil, fmt.Errorf("%s in the image is not a regular file of at most %d bytes", path, maxAccountFile)
		}
		return io.ReadAll(io.LimitReader(tr, maxAccountFile))
	}
	if passwd, err = read("/etc/passwd"); err != nil {
		return nil, nil, err
	}
	if group, err = read("/etc/group"); err != nil {
		return nil, nil, err
	}
	return passwd, group, nil
}

// ProgramAPI is what FindProgram asks of the engine. *client.Client has it.
type ProgramAPI interface {
	ContainerCreate(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerStatPath(ctx context.Context, id string, opts client.ContainerStatPathOptions) (client.ContainerStatPathResult, error)
	ContainerRemove(ctx context.Context, id string, opts client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
}

var _ ProgramAPI = (*client.Client)(nil)

// FindProgram looks for the first of names in the image ref's PATH (its configured
// environment's, else the usual one), through a container created for it (never started)
// and removed after; it returns the path found, "" with the PATH searched when none is there.
func FindProgram(ctx context.Context, eng ProgramAPI, ref string, names []string, labels map[string]string) (found, path string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := eng.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: ref, Entrypoint: []string{"/benchctl-never-started"}, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if err != nil {
		return "", "", err
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer rcancel()
		_, _ = eng.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}()
	path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if in, err := eng.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{}); err == nil && in.Container.Config != nil {
		for _, kv := range in.Container.Config.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
	}
	for _, name := range names {
		for _, dir := range filepath.SplitList(path) {
			if !filepath.IsAbs(dir) {
				continue
			}
			p := filepath.Join(dir, name)
			if _, err := eng.ContainerStatPath(ctx, c.ID, client.ContainerStatPathOptions{Path: p}); err == nil {
				return p, path, nil
			} else if !cerrdefs.IsNotFound(err) {
				return "", path, err
			}
		}
	}
	return "", path, nil
}
