package zoocurator_test

// A user's go doc shows the methods they call on the type they hold: no exported
// type of the module embeds an unexported one, whose methods go doc would show on a type
// the user cannot name.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestNoExportedTypeEmbedsAnUnexportedOne(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "internal") {
				return filepath.SkipDir // internal packages are no user's go doc
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				checked++
				for _, field := range st.Fields.List {
					if len(field.Names) > 0 {
						continue
					}
					if name := embeddedName(field.Type); name != "" && !ast.IsExported(name) {
						t.Errorf("%s: exported type %s embeds the unexported %s: go doc shows its methods on a type the user cannot name; hold it in a field and write the methods out",
							fset.Position(field.Pos()), ts.Name.Name, name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d exported struct types found: the walk missed the packages", checked)
	}
}

// embeddedName is the type name of an embedded field: T, *T, T[X], *pkg.T (pkg.T is
// exported by construction and named by its selector).
func embeddedName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return embeddedName(x.X)
	case *ast.IndexListExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}
