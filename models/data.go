package models

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// A MAD model's data key names entries of the checkout's data.json (madengine's
// core/dataprovider.py): {"<dataname>": {"<provider type>": {config}}}, the provider types
// custom, local, minio, nas and aws, tried in that order. benchctl reaches the local
// provider: {"path": P, "home": H, "readwrite": "true"}, P mounted at H (default
// /data_dlm_<n>, n counting the data names in the order the models use them, as madengine
// counts its providers), read-only unless readwrite is "true". A data name whose first
// provider benchctl cannot reach (custom runs a script, minio, nas and aws download with
// credentials madengine holds) is refused, naming the model, the key and the file.

// DataFile is the name of a checkout's data providers file, beside its models.json.
const DataFile = "data.json"

// dataProviders are madengine's provider types, in the order it tries them.
var dataProviders = []string{"custom", "local", "minio", "nas", "aws"}

// Bounds of the size measured of a local data folder.
const (
	maxSizeEntries = 200_000
	maxSizeTime    = 10 * time.Second
)

// errNoDataFile: the checkout has no data.json.
var errNoDataFile = errors.New("no " + DataFile)

// dataFile is a checkout's data.json, read once per import.
type dataFile struct {
	path    string
	root    *document.Node // nil: no data.json
	err     error
	index   map[string]int // data name -> its default home's number
	entries map[string]manifest.DataSet
}

func newDataFile(catalogDir string) *dataFile {
	d := &dataFile{path: filepath.Join(catalogDir, DataFile), index: map[string]int{}, entries: map[string]manifest.DataSet{}}
	data, err := safefile.ReadFile(d.path, manifest.MaxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return d
	case err != nil:
		d.err = fmt.Errorf("%s: %s", d.path, fileProblem(err))
		return d
	}
	root, err := document.Parse("data.json", data)
	if err != nil {
		var pe *document.ParseError
		if errors.As(err, &pe) {
			d.err = fmt.Errorf("%s:%d: %s", d.path, pe.Line, pe.Msg)
		} else {
			d.err = fmt.Errorf("%s: %v", d.path, err)
		}
		return d
	}
	if root.Kind != document.MapNode {
		d.err = fmt.Errorf("%s:%d: must be a JSON object of data names, got %s", d.path, root.Line, describe(root))
		return d
	}
	d.root = root
	return d
}

// dataSets resolves a model's data key (comma-separated names).
func (d *dataFile) dataSets(key string) ([]manifest.DataSet, error) {
	if d.err != nil {
		return nil, d.err
	}
	var out []manifest.DataSet
	for _, name := range strings.Split(key, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		ds, err := d.entry(name)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Home == ds.Home && ds.Home != "" {
				return nil, fmt.Errorf("data %s and %s are both mounted at %s (their home in %s): give each its own", document.Quote(o.Name), document.Quote(ds.Name), ds.Home, d.path)
			}
		}
		out = append(out, ds)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("data %s names no data set: give a key of %s", document.Quote(key), d.path)
	}
	return out, nil
}

// entry resolves one data name, once.
func (d *dataFile) entry(name string) (manifest.DataSet, error) {
	if ds, ok := d.entries[name]; ok {
		return ds, nil
	}
	if d.root == nil {
		return manifest.DataSet{}, errNoDataFile
	}
	var cfg *document.Node
	line := 0
	for i, k := range d.root.Keys {
		if k.Value == name {
			cfg, line = d.root.Items[i], k.Line
		}
	}
	if cfg == nil {
		return manifest.DataSet{}, fmt.Errorf("data %s is not a key of %s", document.Quote(name), d.path)
	}
	where := fmt.Sprintf("%s:%d", d.path, line)
	if cfg.Kind != document.MapNode {
		return manifest.DataSet{}, fmt.Errorf("data %s: %s: must be an object of provider types (local, nas, ...), got %s", document.Quote(name), where, describe(cfg))
	}
	var types []string
	var local *document.Node
	for i, k := range cfg.Keys {
		if !slices.Contains(dataProviders, k.Value) {
			return manifest.DataSet{}, fmt.Errorf("data %s: %s: %s is not one of madengine's data providers (%s)", document.Quote(name), where, document.Quote(k.Value), strings.Join(dataProviders, ", "))
		}
		types = append(types, k.Value)
		if k.Value == "local" {
			local = cfg.Items[i]
		}
	}
	slices.SortFunc(types, func(a, b string) int { return slices.Index(dataProviders, a) - slices.Index(dataProviders, b) })
	if len(types) == 0 { // MAD's {"huggingface": {}}: madengine finds no provider and runs the model without data
		ds := manifest.DataSet{Name: name}
		d.entries[name] = ds
		return ds, nil
	}
	if types[0] != "local" {
		first := types[0]
		return manifest.DataSet{}, fmt.Errorf("data %s: %s: its provider %s (of %s) is one benchctl cannot reach: madengine tries %s in this order, and benchctl mounts only a local path (one every node has, NFS included); "+
			"give %s a \"local\" entry ({\"local\": {\"path\": \"/nfs/datasets/%s\"}}) first, or fetch the data before the job",
			document.Quote(name), where, first, strings.Join(types, ", "), strings.Join(dataProviders, ", "), document.Quote(name), name)
	}
	ds, err := d.local(name, local)
	if err != nil {
		return manifest.DataSet{}, fmt.Errorf("data %s: %s: local: %w", document.Quote(name), where, err)
	}
	d.entries[name] = ds
	return ds, nil
}

// local reads a local provider's settings.
func (d *dataFile) local(name string, n *document.Node) (manifest.DataSet, error) {
	if n.Kind != document.MapNode {
		return manifest.DataSet{}, fmt.Errorf(`must be an object ({"path": "/nfs/datasets/%s"}), got %s`, name, describe(n))
	}
	ds := manifest.DataSet{Name: name, Provider: "local"}
	for i, k := range n.Keys {
		v, ok := text(n.Items[i])
		if !ok {
			return ds, fmt.Errorf("%s must be a string, got %s", k.Value, describe(n.Items[i]))
		}
		switch k.Value {
		case "path":
			ds.Source = v
		case "home":
			if !path.IsAbs(v) || strings.ContainsAny(v, ",:") || path.Clean(v) == "/" || strings.HasPrefix(path.Clean(v), manifest.ReservedMountRoot) || path.Clean(v) == Workspace {
				return ds, fmt.Errorf("home %s must be an absolute container path of its own (not /, %s or %s; no ',' or ':', which MAD_DATAHOME and mounts use)", document.Quote(v), Workspace, manifest.ReservedMountRoot)
			}
			ds.Home = path.Clean(v)
		case "readwrite":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return ds, fmt.Errorf("readwrite must be \"true\" or \"false\", got %s", document.Quote(v))
			}
			ds.ReadWrite = b
		case "mirrorlocal":
			return ds, fmt.Errorf("mirrorlocal is for the downloading providers (madengine refuses it for local too)")
		default:
			return ds, fmt.Errorf("%s is not a setting of the local provider (path, home, readwrite)", document.Quote(k.Value))
		}
	}
	if ds.Source == "" {
		return ds, fmt.Errorf(`path is required: the folder to mount ({"path": "/nfs/datasets/%s"})`, name)
	}
	if !filepath.IsAbs(ds.Source) { // madengine reads it from the checkout, its working folder
		ds.Source = filepath.Join(filepath.Dir(d.path), ds.Source)
	}
	ds.Source = filepath.Clean(ds.Source)
	if _, err := os.Stat(ds.Source); err != nil {
		return ds, fmt.Errorf("path %s: %s (it must exist where benchctl loads the checkout and on every node)", ds.Source, fileProblem(err))
	}
	if ds.Home == "" {
		if _, ok := d.index[name]; !ok {
			d.index[name] = len(d.index)
		}
		ds.Home = fmt.Sprintf("/data_dlm_%d", d.index[name])
	}
	return ds, nil
}

// MeasureDataSizes records the size of each data set of benches (DataSet.Size, perf.csv's
// data_size) that has none yet: a file's size, or a folder's as folderSize measures it,
// each source once. Loading a checkout does not measure, since every node of a job loads
// it and a folder's walk may take maxSizeTime: the job's rank 0 measures, before it
// writes job.json, which collect reads the sizes from. A source gone since the load
// stays unmeasured ("").
func MeasureDataSizes(benches []manifest.Benchmark) {
	sizes := map[string]string{}
	for _, b := range benches {
		if b.Model == nil {
			continue
		}
		for i := range b.Model.DataSets {
			ds := &b.Model.DataSets[i]
			if ds.Size != "" || ds.Source == "" {
				continue
			}
			size, ok := sizes[ds.Source]
			if !ok {
				if st, err := os.Stat(ds.Source); err == nil && st.IsDir() {
					size = folderSize(ds.Source)
				} else if err == nil {
					size = humanSize(st.Size())
				}
				sizes[ds.Source] = size
			}
			ds.Size = size
		}
	}
}

// folderSize is a folder's size as du -sh writes it (apparent sizes, links not followed),
// or "" when it has more than maxSizeEntries entries or takes longer than maxSizeTime to
// walk (a huge NFS data set: its size is not worth the wait).
func folderSize(root string) string {
	var total int64
	n := 0
	deadline := time.Now().Add(maxSizeTime)
	stop := errors.New("stop")
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return stop
		}
		if n++; n > maxSizeEntries || n%1000 == 0 && time.Now().After(deadline) {
			return stop
		}
		if e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		return ""
	}
	return humanSize(total)
}

// humanSize writes bytes as du -h does: 1024-based, one decimal below 10 (4.0K, 1.5G),
// whole numbers above (12M), plain bytes below 1K.
func humanSize(b int64) string {
	if b < 1024 {
		return strconv.FormatInt(b, 10)
	}
	v := float64(b)
	unit := ""
	for _, u := range []string{"K", "M", "G", "T", "P", "E"} {
		v /= 1024
		unit = u
		if v < 1024 {
			break
		}
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + unit
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + unit
}

// guestOS is a model's MAD_GUEST_OS: the guest OS asked for (models.guestOS), else its
// Dockerfile's CONTEXT guest_os, else madengine's default, UBUNTU; upper-cased.
func guestOS(asked string, img *manifest.Image) string {
	if asked != "" {
		return strings.ToUpper(asked)
	}
	if img != nil && img.Dockerfile != "" {
		if b, err := safefile.ReadFile(img.Dockerfile, manifest.MaxFileSize); err == nil {
			if ctx, ok, err := ParseContextLine(b); ok && err == nil && ctx["guest_os"] != "" {
				return strings.ToUpper(ctx["guest_os"])
			}
		}
	}
	return "UBUNTU"
}
