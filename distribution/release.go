package distribution

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// MaxImages bounds the images of one job: rank 0 releases them all in one job-channel
// message (64 KiB), one value of at most 1 KiB each (a job-channel value is cut at 4 KiB).
const MaxImages = 60

// releaseData is the "image" release: one value per image (a job-channel value is at most
// 4 KiB, a whole message 64 KiB), and their count.
func releaseData(list []Image) (map[string]string, error) {
	data := map[string]string{"images": strconv.Itoa(len(list))}
	for i, img := range list {
		b, err := json.Marshal(img)
		if err != nil {
			return nil, err
		}
		if len(b) > 1<<10 {
			return nil, fmt.Errorf("image %s: its reference is too long to release (%d bytes)", img.Ref, len(b))
		}
		data["image."+strconv.Itoa(i)] = string(b)
	}
	return data, nil
}

// releasedImages reads the "image" release: want images, as this node's manifest has.
func releasedImages(data map[string]string, want int) ([]Image, error) {
	n, err := strconv.Atoi(data["images"])
	if err != nil || n != want {
		return nil, fmt.Errorf("rank 0 released %q images for %d of this node's (is every node running the same manifest and benchctl?)", data["images"], want)
	}
	list := make([]Image, n)
	for i := range list {
		if err := json.Unmarshal([]byte(data["image."+strconv.Itoa(i)]), &list[i]); err != nil || list[i].ID == "" {
			return nil, fmt.Errorf("rank 0's release of image %d cannot be read (is every node running the same benchctl?): %v", i, err)
		}
	}
	return list, nil
}
