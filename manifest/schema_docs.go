package manifest

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
)

// specSource is spec.go itself: its field comments are the schema's descriptions, read when
// the schema is built, so that they cannot drift from the code.
//
//go:embed spec.go
var specSource []byte

// fieldDocs returns the doc comment of every field of spec.go's structs, by "Type.Field".
func fieldDocs() (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "spec.go", specSource, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("manifest schema: reading the field comments: %w", err)
	}
	docs := map[string]string{}
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
	return docs, nil
}
