package image

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"time"
)

// dockerfileInContext is where a Dockerfile outside the context is placed in the tar.
const dockerfileInContext = ".benchctl.Dockerfile"

// writeContextTar streams the build context as the builder receives it (same file list as
// the key) and returns the Dockerfile's name inside it. Times and owners are normalised so
// the tar depends only on what the key covers.
func writeContextTar(w io.Writer, in BuildInput, files []contextFile) (string, error) {
	tw := tar.NewWriter(w)
	dfName, inside := relInside(in.Context, in.Dockerfile)
	epoch := time.Unix(0, 0)
	buf := make([]byte, 256<<10)
	add := func(name, abs string, mode fs.FileMode, size int64, link string) error {
		h := &tar.Header{Name: name, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, link
		case mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		default:
			h.Typeflag, h.Size = tar.TypeReg, size
		}
		h.Mode = int64(mode.Perm())
		if mode&fs.ModeSetuid != 0 {
			h.Mode |= 0o4000
		}
		if mode&fs.ModeSetgid != 0 {
			h.Mode |= 0o2000
		}
		if mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(abs)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyBuffer(tw, io.LimitReader(f, size), buf)
		return err
	}
	for _, f := range files {
		if err := add(f.rel, f.abs, f.mode, f.size, f.link); err != nil {
			return "", err
		}
	}
	if !inside {
		st, err := os.Stat(in.Dockerfile)
		if err != nil {
			return "", err
		}
		dfName = dockerfileInContext
		if err := add(dfName, in.Dockerfile, 0o644, st.Size(), ""); err != nil {
			return "", err
		}
	}
	return dfName, tw.Close()
}

// tarSize estimates the size of the context tar of files: a header per entry and contents
// in 512-byte blocks, plus the end marker (long names add a few blocks more).
func tarSize(files []contextFile) int64 {
	n := int64(1024)
	for _, f := range files {
		n += 512 + (f.size+511)/512*512
	}
	return n
}
