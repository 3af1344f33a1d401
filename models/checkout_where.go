package models

import (
	"errors"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/manifest/document"
)

// The manifest document a checkout run stands for is never seen: its problems and warnings
// are told where the user gave the value, a context key, --tags or the checkout folder.

// where maps a field of the document back to what the user gave: a context key, --tags,
// or the checkout folder.
func (c *checkout) where(p string) (file, field string) {
	label := c.ctx.label
	switch {
	case strings.HasPrefix(p, "env."):
		return label, "docker_env_vars." + short(strings.TrimPrefix(p, "env."))
	case strings.HasPrefix(p, "image.buildArgs."):
		return label, "docker_build_arg." + short(strings.TrimPrefix(p, "image.buildArgs."))
	case p == "gpu.vendor":
		return label, "gpu_vendor"
	case p == "gpu.count":
		return label, "docker_gpus"
	case p == "models.guestOS":
		return label, "guest_os"
	case p == "models" || strings.HasPrefix(p, "models.tags"):
		return "--tags", ""
	case strings.HasPrefix(p, "mounts["):
		i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "mounts["), "]"))
		if i >= 0 && i < len(c.ctx.mounts) {
			return label, "docker_mounts." + short(c.ctx.mounts[i].target)
		}
		return label, "docker_mounts"
	}
	return c.dir, p
}

// problems relocates the document's problems; the catalog's keep their file and line.
func (c *checkout) problems(err error) error {
	var me *document.Error
	if !errors.As(err, &me) {
		return err
	}
	ps := make([]document.Problem, len(me.Problems))
	for i, p := range me.Problems {
		if p.File == c.doc {
			p.File, p.Path = c.where(p.Path)
			p.Line = 0
		}
		ps[i] = p
	}
	return &document.Error{File: c.dir, Kind: "MAD checkout", Problems: ps}
}

// warnings relocates the document's warnings ("FILE:LINE: PATH: message") like problems.
func (c *checkout) warnings(ws []string) []string {
	for i, w := range ws {
		rest, ok := strings.CutPrefix(w, c.doc+":")
		if !ok {
			continue
		}
		if _, after, ok := strings.Cut(rest, ": "); ok { // after the line number
			rest = after
		}
		p, msg, ok := strings.Cut(rest, ": ")
		if !ok {
			p, msg = "", rest
		}
		file, field := c.where(p)
		ws[i] = document.Problem{File: file, Path: field, Msg: msg}.String()
	}
	return ws
}
