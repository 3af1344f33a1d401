package manifest

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"

	"github.com/benchctl/benchctl/manifest/kubernetes"
)

// specSource is spec.go itself: its field comments are the schema's descriptions, read when
// the schema is built, so that they cannot drift from the code.
//
//go:embed spec.go
var specSource []byte

// fieldDocs returns the doc comment of every field of spec.go's structs, and of the
// blocks spec.go takes from packages of their own (kubernetes.Block), by "Type.Field".
func fieldDocs() (map[string]string, error) {
	docs := map[string]string{}
	for _, src := range []struct {
		name string
		text []byte
	}{{"spec.go", specSource}, {"manifest/kubernetes/block.go", kubernetes.BlockSource}} {
		if err := readFieldDocs(src.name, src.text, docs); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

func readFieldDocs(name string, src []byte, docs map[string]string) error {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ParseComments)
	if err != nil {
		return fmt.Errorf("manifest schema: reading the field comments of %s: %w", name, err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fld := range st.Fields.List {
			for _, name := range fld.Names {
				docs[ts.Name.Name+"."+name.Name] = fld.Doc.Text()
			}
		}
		return false
	})
	return nil
}
