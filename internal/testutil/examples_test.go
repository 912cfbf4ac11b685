package testutil_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasRunnableExample: every package a user imports (framework, retry,
// cache, zktest and each recipe) has at least one Example function in a _test.go file
// with an output comment, so that go test runs it and go doc shows it.
func TestEveryPackageHasRunnableExample(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs := []string{"framework", "retry", "cache", "discovery", "zktest"}
	recipes, err := os.ReadDir(filepath.Join(root, "recipes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range recipes {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("recipes", e.Name()))
		}
	}
	for _, dir := range dirs {
		matches, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		var files []*ast.File
		for _, m := range matches {
			f, err := parser.ParseFile(fset, m, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		runnable := 0
		for _, ex := range doc.Examples(files...) {
			if ex.Output != "" || ex.EmptyOutput {
				runnable++
			}
		}
		if runnable == 0 {
			t.Errorf("%s: no Example function with an // Output: comment", strings.ReplaceAll(dir, string(filepath.Separator), "/"))
		}
	}
}

// TestExampleProgramsAreSelfContained: the programs under examples/ import nothing a user
// cannot import (no internal package), so each can be copied out as it is, and each makes
// its clients in its own main.go with framework.Connect, where its options show.
func TestExampleProgramsAreSelfContained(t *testing.T) {
	root := filepath.Join("..", "..", "examples")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	programs := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" {
			continue
		}
		programs++
		matches, err := filepath.Glob(filepath.Join(root, e.Name(), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if strings.HasSuffix(m, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), m, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if strings.Contains(imp.Path.Value, "/internal/") {
					t.Errorf("examples/%s/%s imports %s, which a user cannot import", e.Name(), filepath.Base(m), imp.Path.Value)
				}
			}
		}
		main, err := os.ReadFile(filepath.Join(root, e.Name(), "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(main), "framework.Connect(") {
			t.Errorf("examples/%s/main.go does not make its clients with framework.Connect", e.Name())
		}
	}
	if programs == 0 {
		t.Fatal("no example programs found")
	}
}
