package distribution

import (
	"strings"
	"testing"
)

// The image release carries one value per image: the job channel cuts a value at 4 KiB and
// a message at 64 KiB, and one value holding 20 images' list was cut, so every worker failed
// to read it. At the most images a job may have, with the longest references, every value
// and the whole message fit.
func TestReleaseOfManyImagesFits(t *testing.T) {
	list := make([]Image, MaxImages)
	for i := range list {
		name := "registry.example.com:5000/" + strings.Repeat("n", 200)
		list[i] = Image{Ref: name + ":" + strings.Repeat("t", 128), ID: "sha256:" + strings.Repeat("a", 64),
			Key: strings.Repeat("b", 64), Digest: name + "@sha256:" + strings.Repeat("c", 64)}
	}
	data, err := releaseData(list)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for k, v := range data {
		if len(v) > 1<<10 {
			t.Errorf("%s is %d bytes", k, len(v))
		}
		total += len(k) + len(v) + 8
	}
	if total > 60<<10 {
		t.Errorf("the release is %d bytes", total)
	}
	got, err := releasedImages(data, len(list))
	if err != nil || len(got) != len(list) || got[59].Ref != list[59].Ref || got[59].Digest != list[59].Digest || got[59].Key != list[59].Key {
		t.Fatalf("%v", err)
	}
	if _, err := releasedImages(data, 3); err == nil || !strings.Contains(err.Error(), `rank 0 released "60" images for 3`) {
		t.Errorf("a different manifest: %v", err)
	}
	delete(data, "image.7")
	if _, err := releasedImages(data, len(list)); err == nil || !strings.Contains(err.Error(), "image 7 cannot be read") {
		t.Errorf("a lost value: %v", err)
	}
}
