package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// importData imports the models of a checkout made of files with tags, for gpu.vendor none.
func importData(t *testing.T, files map[string]string, tags ...string) ([]manifest.Benchmark, []string, error) {
	t.Helper()
	if _, ok := files["run.sh"]; !ok { // the models' script (dataModels), so that no warning says it is missing
		files["run.sh"] = "#!/bin/bash\n"
	}
	dir := writeCheckout(t, files)
	return Importer(manifest.CatalogImport{Models: manifest.Models{Catalog: filepath.Join(dir, "models.json"), Tags: tags}, Vendor: "none"})
}

// The fixture checkout's scripts/echo_dir model reads fixture_data, a local path of the
// checkout: it is mounted read-only at madengine's default home. Its size is not measured
// at load, which every node does, but by MeasureDataSizes (rank 0 only).
func TestDataLocalProvider(t *testing.T) {
	dir := fixtureCheckout(t)
	bs, _, err := Importer(manifest.CatalogImport{Models: manifest.Models{Catalog: filepath.Join(dir, "models.json"), Tags: []string{"discovery"}}, Vendor: "amd"})
	if err != nil || len(bs) != 2 {
		t.Fatalf("%v %v", bs, err)
	}
	st, err := os.Stat(filepath.Join(dir, "data/fixture_data/sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := manifest.DataSet{Name: "fixture_data", Provider: "local", Source: filepath.Join(dir, "data/fixture_data"), Home: "/data_dlm_0"}
	if got := bs[1].Model.DataSets; len(got) != 1 || got[0] != want || bs[0].Model.DataSets != nil || bs[1].Model.GuestOS != "UBUNTU" {
		t.Fatalf("%+v, want %+v", bs[1].Model, want)
	}
	MeasureDataSizes(bs)
	want.Size = humanSize(st.Size())
	if got := bs[1].Model.DataSets; got[0] != want {
		t.Fatalf("%+v, want %+v", got[0], want)
	}
}

// MeasureDataSizes walks each data folder once, whatever the models sharing it, and keeps a
// size already recorded.
func TestMeasureDataSizes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), make([]byte, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "x")
	bs := []manifest.Benchmark{
		{Name: "a", Model: &manifest.Model{DataSets: []manifest.DataSet{{Name: "d", Source: dir}, {Name: "f", Source: file}}}},
		{Name: "b", Model: &manifest.Model{DataSets: []manifest.DataSet{{Name: "d", Source: dir}, {Name: "kept", Source: dir, Size: "9.9T"}}}},
		{Name: "native"},
		{Name: "gone", Model: &manifest.Model{DataSets: []manifest.DataSet{{Name: "g", Source: filepath.Join(dir, "nowhere")}}}},
	}
	MeasureDataSizes(bs)
	a, b := bs[0].Model.DataSets, bs[1].Model.DataSets
	if a[0].Size != "2.9K" || a[1].Size != "2.9K" || b[0].Size != "2.9K" || b[1].Size != "9.9T" || bs[3].Model.DataSets[0].Size != "" {
		t.Fatalf("%+v %+v %+v", a, b, bs[3].Model.DataSets)
	}
}

const dataModels = `[
  {"name": "a", "scripts": "run.sh", "tags": ["t"], "data": "ds1"},
  {"name": "b", "scripts": "run.sh", "tags": ["t"], "data": "ds2, ds1"}
]`

func TestDataProviders(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       string // an error's words; "" = imports
		check      func(t *testing.T, bs []manifest.Benchmark)
	}{
		{"local paths, homes numbered as madengine's providers", `{"ds1": {"local": {"path": "d1"}}, "ds2": {"local": {"path": "d2", "home": "/data/two", "readwrite": "true"}}}`, "",
			func(t *testing.T, bs []manifest.Benchmark) {
				a, b := bs[0].Model.DataSets, bs[1].Model.DataSets
				if len(a) != 1 || a[0].Home != "/data_dlm_0" || a[0].ReadWrite || len(b) != 2 || b[0].Home != "/data/two" || !b[0].ReadWrite || b[1] != a[0] {
					t.Fatalf("%+v %+v", a, b)
				}
			}},
		{"local before the ones benchctl cannot reach", `{"ds1": {"nas": {"path": "/x"}, "local": {"path": "d1"}}, "ds2": {"aws": {"path": "s3://x"}, "local": {"path": "d2"}}}`, "", nil},
		{"s3 only", `{"ds1": {"local": {"path": "d1"}}, "ds2": {"aws": {"path": "s3://bucket/x"}}}`,
			`b.data: data "ds2": |data.json:1: its provider aws (of aws) is one benchctl cannot reach`, nil},
		{"minio and nas", `{"ds1": {"minio": {"path": "x"}, "nas": {"path": "y"}}, "ds2": {"local": {"path": "d2"}}}`,
			`a.data: data "ds1": |data.json:1: its provider minio (of minio, nas) is one benchctl cannot reach`, nil},
		{"custom before local", `{"ds1": {"local": {"path": "d1"}, "custom": {"path": "scripts/get.sh"}}, "ds2": {"local": {"path": "d2"}}}`,
			`its provider custom (of custom, local) is one benchctl cannot reach`, nil},
		{"an unknown provider", `{"ds1": {"ftp": {}}, "ds2": {"local": {"path": "d2"}}}`, `"ftp" is not one of madengine's data providers`, nil},
		{"no path", `{"ds1": {"local": {}}, "ds2": {"local": {"path": "d2"}}}`, "local: path is required", nil},
		{"a path missing", `{"ds1": {"local": {"path": "nowhere"}}, "ds2": {"local": {"path": "d2"}}}`, "nowhere: no such file", nil},
		{"mirrorlocal", `{"ds1": {"local": {"path": "d1", "mirrorlocal": "/tmp"}}, "ds2": {"local": {"path": "d2"}}}`, "mirrorlocal is for the downloading providers", nil},
		{"a home in the workspace", `{"ds1": {"local": {"path": "d1", "home": "/myworkspace"}}, "ds2": {"local": {"path": "d2"}}}`, "must be an absolute container path of its own", nil},
		{"two data sets at one home", `{"ds1": {"local": {"path": "d1", "home": "/data"}}, "ds2": {"local": {"path": "d2", "home": "/data/"}}}`, `data "ds2" and "ds1" are both mounted at /data`, nil},
		{"a home with a comma", `{"ds1": {"local": {"path": "d1", "home": "/a,b"}}, "ds2": {"local": {"path": "d2"}}}`, "no ',' or ':'", nil},
		{"readwrite not a boolean", `{"ds1": {"local": {"path": "d1", "readwrite": "yes please"}}, "ds2": {"local": {"path": "d2"}}}`, `readwrite must be "true" or "false"`, nil},
		{"a name not in data.json", `{"ds1": {"local": {"path": "d1"}}}`, `data "ds2" is not a key of`, nil},
		{"not an object", `[]`, "must be a JSON object of data names", nil},
		{"invalid JSON", `{"ds1": `, "data.json:1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"models.json": dataModels, "data.json": tc.data, "d1/x.bin": "12345", "d2/y.bin": "1"}
			bs, _, err := importData(t, files, "t")
			if tc.want == "" {
				if err != nil || len(bs) != 2 {
					t.Fatalf("%v", err)
				}
				if tc.check != nil {
					tc.check(t, bs)
				}
				return
			}
			for _, w := range strings.Split(tc.want, "|") { // the parts around the temporary folder
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("%v\nwant %q", err, tc.want)
				}
			}
		})
	}
}

// A data name whose entry has no provider (MAD's data.json is {"huggingface": {}}) runs
// without a data mount, with a warning naming it, as madengine runs it; the name is kept
// (MAD_DATANAME, perf.csv's dataname) and it has no home. A provider benchctl cannot reach
// is still refused (TestDataProviders).
func TestDataWithoutAProvider(t *testing.T) {
	bs, warns, err := importData(t, map[string]string{"models.json": dataModels, "data.json": `{"huggingface": {}, "ds1": {}, "ds2": {"local": {"path": "/"}}}`}, "t")
	if err != nil || len(bs) != 2 {
		t.Fatalf("%v %v %v", bs, warns, err)
	}
	a := bs[0].Model.DataSets
	if len(a) != 1 || a[0] != (manifest.DataSet{Name: "ds1"}) {
		t.Errorf("a: %+v", a)
	}
	b := bs[1].Model.DataSets // "ds2, ds1": a local one at its home, and one without a provider
	if len(b) != 2 || b[0].Provider != "local" || b[0].Home != "/data_dlm_0" || b[1] != (manifest.DataSet{Name: "ds1"}) {
		t.Errorf("b: %+v", b)
	}
	n := 0
	for _, w := range warns {
		if strings.Contains(w, `data "ds1" has no provider in`) && strings.Contains(w, "runs without a data mount") {
			n++
		}
	}
	if n != 2 || len(warns) != 2 {
		t.Errorf("warnings %q: want one per model naming ds1", warns)
	}
}

// Without a data.json the data key is not mounted, with a warning, as madengine runs it.
func TestDataWithoutDataJSON(t *testing.T) {
	bs, warns, err := importData(t, map[string]string{"models.json": dataModels}, "t")
	if err != nil || len(bs) != 2 || bs[0].Model.DataSets != nil || len(warns) != 2 || !strings.Contains(warns[0], `a: data "ds1" is not mounted: the checkout has no data.json`) {
		t.Fatalf("%v %v %v", bs, warns, err)
	}
}

func TestHumanSize(t *testing.T) {
	for b, want := range map[int64]string{0: "0", 1023: "1023", 1024: "1.0K", 1536: "1.5K", 12 << 20: "12M", 5 << 30: "5.0G"} {
		if got := humanSize(b); got != want {
			t.Errorf("%d: %s, want %s", b, got, want)
		}
	}
}
