package gpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// CDISpecDirs are the folders container engines read CDI specs from unless configured
// otherwise (the CDI specification's defaults; /var/run/cdi wins over /etc/cdi).
var CDISpecDirs = []string{"/etc/cdi", "/var/run/cdi"}

// NVIDIACDIKind is the kind nvidia-ctk's CDI specs declare for whole GPUs.
const NVIDIACDIKind = "nvidia.com/gpu"

// Bounds on what ReadCDISpecs reads: a spec directory is a node's configuration, but a
// large or hostile file must not stall a run. nvidia-ctk's spec for 8 GPUs is ~40 KB.
const (
	maxCDISpecBytes = 4 << 20
	maxCDISpecFiles = 256
)

// CDISpecs is what the CDI spec files on a node declare.
type CDISpecs struct {
	// Dirs are the folders that were read (those that do not exist included).
	Dirs []string
	// Devices maps each fully qualified device name ("nvidia.com/gpu=0") to the file that
	// declares it (a later folder's declaration wins, as in the CDI specification).
	Devices map[string]string
	// DeviceNodes maps each device name to the host device files its containerEdits list
	// ("/dev/nvidia3"), to tell a stale spec from the GPU it names.
	DeviceNodes map[string][]string
	// Problems are the spec files that were skipped, and why: malformed, too large, not a
	// regular file (or a link to none). One bad file never hides the others.
	Problems []string
	// Links are the spec files read through a link, and where it leads: engines read them
	// so (the CDI library opens each file by its path).
	Links []string
}

// Has says whether a spec declares the fully qualified device name.
func (s CDISpecs) Has(name string) bool {
	_, ok := s.Devices[name]
	return ok
}

// Names are the declared device names of one kind ("nvidia.com/gpu"), sorted.
func (s CDISpecs) Names(kind string) []string {
	var out []string
	for n := range s.Devices {
		if k, _, _ := strings.Cut(n, "="); k == kind {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// cdiSpec is the part of a CDI spec file that names devices; containerEdits and the
// rest are the engine's business.
type cdiSpec struct {
	Version string `json:"cdiVersion" yaml:"cdiVersion"`
	Kind    string `json:"kind" yaml:"kind"`
	Devices []struct {
		Name           string `json:"name" yaml:"name"`
		ContainerEdits struct {
			DeviceNodes []struct {
				Path     string `json:"path" yaml:"path"`
				HostPath string `json:"hostPath" yaml:"hostPath"`
			} `json:"deviceNodes" yaml:"deviceNodes"`
		} `json:"containerEdits" yaml:"containerEdits"`
	} `json:"devices" yaml:"devices"`
}

// The CDI specification's forms: kind is vendor/class, vendor a domain-like name; a
// device name is letters, digits and _ . : - starting and ending with a letter or digit.
var (
	cdiKindRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]/[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$`)
	cdiNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$`)
)

// ReadCDISpecs reads the *.json and *.yaml CDI spec files of dirs (CDISpecDirs when
// empty), each under root ("" or "/" is the node itself; tests pass a recorded tree), as
// container engines find them. A link is followed to a regular file wherever it leads, as
// engines do, and said so in Links; a FIFO, device or other non-regular file (named or
// linked to; never opened blocking), a file over 4 MiB, and a spec that does not parse or
// lacks cdiVersion, a valid kind or valid device names are Problems, not errors. A folder
// that does not exist has no specs.
func ReadCDISpecs(root string, dirs []string) CDISpecs {
	if len(dirs) == 0 {
		dirs = CDISpecDirs
	}
	s := CDISpecs{Dirs: dirs, Devices: map[string]string{}, DeviceNodes: map[string][]string{}}
	for _, d := range dirs {
		s.readDir(filepath.Join(rootOrSlash(root), d), d)
	}
	return s
}

func rootOrSlash(root string) string {
	if root == "" {
		return "/"
	}
	return root
}

// readDir reads one spec folder (at path; shown as name).
func (s *CDISpecs) readDir(path, name string) {
	dir, err := os.OpenRoot(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %v", name, err))
		return
	}
	defer dir.Close()
	f, err := dir.Open(".")
	if err != nil {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %v", name, err))
		return
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %v", name, err))
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	n := 0
	for _, e := range ents {
		ext := filepath.Ext(e.Name())
		if ext != ".json" && ext != ".yaml" {
			continue // what engines read: the CDI library takes these two only
		}
		if n++; n > maxCDISpecFiles {
			s.Problems = append(s.Problems, fmt.Sprintf("%s: more than %d spec files; the rest were not read", name, maxCDISpecFiles))
			return
		}
		file := filepath.Join(name, e.Name())
		var spec cdiSpec
		if e.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(filepath.Join(path, e.Name()))
			file += ": a link to " + target
			if spec, err = readCDILink(filepath.Join(path, e.Name())); err == nil {
				s.Links = append(s.Links, file+", read as engines read it")
			}
		} else {
			spec, err = readCDIFile(dir, e.Name())
		}
		if err != nil {
			s.Problems = append(s.Problems, file+": "+err.Error())
			continue
		}
		for _, d := range spec.Devices {
			n := spec.Kind + "=" + d.Name
			s.Devices[n] = filepath.Join(name, e.Name())
			var nodes []string
			for _, dn := range d.ContainerEdits.DeviceNodes {
				p := dn.HostPath
				if p == "" {
					p = dn.Path
				}
				nodes = append(nodes, p)
			}
			s.DeviceNodes[n] = nodes
		}
	}
}

// readCDIFile opens a spec that is no link through its folder (os.Root), non-blocking so
// a FIFO cannot stall, and reads at most maxCDISpecBytes of a regular file.
func readCDIFile(dir *os.Root, name string) (cdiSpec, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return cdiSpec{}, fmt.Errorf("not read: %w", err)
	}
	defer f.Close()
	return readCDIOpen(f, name, nil)
}

// readCDILink reads the spec a link leads to (the kernel bounds the chain of links): a
// regular file only, checked before it is opened (a device file is never opened) and
// again on the open descriptor (the same file), opened non-blocking.
func readCDILink(path string) (cdiSpec, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return cdiSpec{}, fmt.Errorf("not read: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return cdiSpec{}, fmt.Errorf("not a regular file (%s)", fileType(fi))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return cdiSpec{}, fmt.Errorf("not read: %w", err)
	}
	defer f.Close()
	return readCDIOpen(f, path, fi)
}

func fileType(fi fs.FileInfo) string {
	if fi.IsDir() {
		return "a directory"
	}
	return fi.Mode().Type().String()
}

// readCDIOpen reads an open spec: a regular file (the same as was, when not nil) of at most
// maxCDISpecBytes.
func readCDIOpen(f *os.File, name string, was fs.FileInfo) (cdiSpec, error) {
	fi, err := f.Stat()
	if err != nil {
		return cdiSpec{}, err
	}
	if !fi.Mode().IsRegular() {
		return cdiSpec{}, fmt.Errorf("not a regular file (%s)", fileType(fi))
	}
	if was != nil && !os.SameFile(fi, was) {
		return cdiSpec{}, errors.New("not read: the file changed while it was opened")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCDISpecBytes+1))
	if err != nil {
		return cdiSpec{}, err
	}
	if len(data) > maxCDISpecBytes {
		return cdiSpec{}, fmt.Errorf("larger than %d bytes", maxCDISpecBytes)
	}
	var spec cdiSpec
	if filepath.Ext(name) == ".json" {
		dec := json.NewDecoder(bytes.NewReader(data))
		err = dec.Decode(&spec)
	} else {
		err = yaml.Unmarshal(data, &spec)
	}
	if err != nil {
		return cdiSpec{}, fmt.Errorf("not a CDI spec: %w", err)
	}
	return spec, validCDI(spec)
}

func validCDI(s cdiSpec) error {
	switch {
	case s.Version == "":
		return errors.New("not a CDI spec: no cdiVersion")
	case !cdiKindRE.MatchString(s.Kind):
		return fmt.Errorf("not a CDI spec: kind %q is not vendor/class", trimForMsg(s.Kind))
	case len(s.Devices) == 0:
		return errors.New("the spec declares no devices")
	}
	for _, d := range s.Devices {
		if !cdiNameRE.MatchString(d.Name) {
			return fmt.Errorf("device name %q is not a CDI device name", trimForMsg(d.Name))
		}
	}
	return nil
}

// trimForMsg keeps a value from a file short enough for a message.
func trimForMsg(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
