package image

import "path/filepath"

// Names of the image cache under a shared directory; CacheLayout computes the paths.
const (
	cacheFolder   = "cache"
	imagesFolder  = "images"
	quarantineDir = "corrupt" // the folder of the cache that damaged entries are moved aside to
	tarSuffix     = ".tar"
	sumSuffix     = ".tar.sha256"
	metaSuffix    = ".json"
	lockSuffix    = ".lock"
)

// CacheLayout computes the paths of the image cache under a shared directory; nobody else
// joins them:
//
//	<shared>/cache/images/             Dir, the Cache's folder
//	  <key>.tar, .tar.sha256, .json    an entry (see Cache)
//	  .<key>.lock                      a builder's lock
//	  corrupt/                         Quarantine: damaged entries moved aside
type CacheLayout struct {
	Shared string // $BENCHCTL_SHARED_DIR
}

// Dir is the cache's folder: <shared>/cache/images.
func (l CacheLayout) Dir() string { return filepath.Join(l.Shared, cacheFolder, imagesFolder) }

// parent is the folder that holds Dir: <shared>/cache.
func (l CacheLayout) parent() string { return filepath.Join(l.Shared, cacheFolder) }

// Quarantine is the folder damaged entries are moved aside to: <shared>/cache/images/corrupt.
func (l CacheLayout) Quarantine() string { return filepath.Join(l.Dir(), quarantineDir) }

// Cache is the cache at Dir for reading, without any check or I/O: it creates nothing,
// and a missing folder reads as an empty cache (CacheIn checks the shared directory,
// OpenCache creates the folder).
func (l CacheLayout) Cache() *Cache { return &Cache{Dir: l.Dir()} }

// quarantinePath is the cache's Quarantine folder.
func (c *Cache) quarantinePath() string { return filepath.Join(c.Dir, quarantineDir) }

// Entry file names of a key, relative to the cache's folder.
func tarName(key string) string  { return key + tarSuffix }
func sumName(key string) string  { return key + sumSuffix }
func metaName(key string) string { return key + metaSuffix }
func lockName(key string) string { return "." + key + lockSuffix }
