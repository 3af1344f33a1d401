package results

import (
	"strings"

	"github.com/benchctl/benchctl/jobdir"
)

// fillData writes perf.csv's data columns of a MAD model with data (madengine's dataname,
// data_provider_type, data_size, data_download_duration), one value per data set,
// comma-separated. A local data set is mounted, not downloaded: its download took 0
// seconds, as madengine records it. A data name without a provider (MAD's {"huggingface":
// {}}) has its name and empty provider columns.
func fillData(set func(col, v string), sets []jobdir.JobDataSet) {
	if len(sets) == 0 {
		return
	}
	var names, types, sizes, took []string
	for _, d := range sets {
		names, types, sizes = append(names, d.Name), append(types, d.Provider), append(sizes, d.Size)
		if d.Provider == "" { // no provider: nothing was mounted or downloaded
			took = append(took, "")
		} else {
			took = append(took, "0")
		}
	}
	set("dataname", strings.Join(names, ","))
	set("data_provider_type", strings.Join(types, ","))
	set("data_size", strings.Join(sizes, ","))
	set("data_download_duration", strings.Join(took, ","))
}
