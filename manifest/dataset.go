package manifest

// DataSet is one data.json entry a MAD model reads (its data key), as benchctl mounts it:
// madengine's data providers, of which benchctl reaches the local one (a path on the nodes,
// NFS included).
type DataSet struct {
	Name      string `json:"name" yaml:"name"`                               // the data.json key (madengine's dataname)
	Provider  string `json:"provider" yaml:"provider"`                       // the provider type: local
	Source    string `json:"source" yaml:"source"`                           // the host path, absolute
	Home      string `json:"home" yaml:"home"`                               // where it is mounted in the container: MAD_DATAHOME
	ReadWrite bool   `json:"readWrite,omitempty" yaml:"readWrite,omitempty"` // data.json's "readwrite": "true"; else read-only
	Size      string `json:"size,omitempty" yaml:"size,omitempty"`           // its size on the job's rank 0, as du -sh writes it (models.MeasureDataSizes, through runner.Catalog); "" when not measured
}
