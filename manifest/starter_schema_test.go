package manifest_test

import (
	"testing"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/starter"
)

// The starter manifest `benchctl init` writes is valid by the schema editors read.
func TestStarterMatchesTheSchema(t *testing.T) {
	text, err := starter.Render(starter.Options{Name: "starter", Dockerfile: "Dockerfile", Schema: "./.benchctl.schema.json"})
	if err != nil {
		t.Fatal(err)
	}
	manifest.MatchesSchema(t, "the starter manifest", "benchmark.yaml", []byte(text))
}
