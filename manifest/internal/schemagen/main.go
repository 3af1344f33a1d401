// Command schemagen writes the manifest's JSON Schema (manifest.Schema) to a file: run by
// `go generate ./manifest/` to refresh docs/manifest.schema.json.
package main

import (
	"fmt"
	"os"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/manifest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: schemagen FILE")
		os.Exit(2)
	}
	b, err := manifest.Schema()
	if err == nil {
		err = atomicfile.WriteFile(os.Args[1], b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
