package jobdir

import (
	"encoding/json"
	"fmt"

	"github.com/benchctl/benchctl/internal/jsonlimit"
)

// fileLimits bound what decoding a status.json or job.json may cost, beyond their 16 MiB
// size cap: a node's status of a thousand benchmarks is a few tens of thousands of values;
// job.json's manifest snapshot is bounded by the manifest's own limit (200,000 values, 64
// levels) and its host list by the world (two million hosts fit). A planted file of
// millions of tiny values (16 MiB of `{},` took 4.3 GB to decode, of `"",` 536 MiB) is
// refused: objects and lists, which decode into structs and slices, to 200,000; all values
// to 2.5 million.
var fileLimits = jsonlimit.Limits{Marks: 2_500_000, Containers: 200_000, Depth: 128}

// decodeFile decodes data read from path into v, within fileLimits.
func decodeFile(path string, data []byte, v any) error {
	if err := jsonlimit.Check(data, fileLimits); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}
