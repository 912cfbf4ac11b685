package testutil_test

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// headingLike is a line that reads as a doc-comment heading ("# Requests"). In go/doc/comment a heading is only rendered as one
// when a blank line precedes and follows it; otherwise it runs into the paragraph around it.
var headingLike = regexp.MustCompile(`^#\s+\S`)

// TestDocCommentsRender parses every doc comment of the module (every .go file, tests and
// examples included) with go/doc/comment, as go doc and pkg.go.dev do, and fails where a
// line that looks like a heading ended up inside a paragraph: the heading is then printed
// as text, run into the sentence before it ("instead of deadlocking. # Requests"). The fix
// is a blank "//" line before and after the heading.
func TestDocCommentsRender(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var docParser comment.Parser
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		for _, cg := range docComments(f) {
			doc := docParser.Parse(cg.Text())
			for _, b := range doc.Content {
				p, ok := b.(*comment.Paragraph)
				if !ok {
					continue
				}
				for _, line := range strings.Split(plainText(p.Text), "\n") {
					if headingLike.MatchString(strings.TrimSpace(line)) {
						t.Errorf("%s:%d: %q is not rendered as a heading (it needs a blank // line before and after it)",
							rel, lineOf(fset, cg, strings.TrimSpace(line)), strings.TrimSpace(line))
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no .go files found under %s", root)
	}
}

// docComments returns the comment groups go doc shows: the package comment and the doc
// comments of declarations, specs and fields.
func docComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(cg *ast.CommentGroup) {
		if cg != nil {
			out = append(out, cg)
		}
	}
	add(f.Doc)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			add(n.Doc)
		case *ast.FuncDecl:
			add(n.Doc)
		case *ast.TypeSpec:
			add(n.Doc)
		case *ast.ValueSpec:
			add(n.Doc)
		case *ast.Field:
			add(n.Doc)
		}
		return true
	})
	return out
}

// lineOf returns the line of the comment in cg whose text is text, or cg's first line.
func lineOf(fset *token.FileSet, cg *ast.CommentGroup, text string) int {
	for _, c := range cg.List {
		if strings.TrimSpace(strings.TrimPrefix(c.Text, "//")) == text {
			return fset.Position(c.Pos()).Line
		}
	}
	return fset.Position(cg.Pos()).Line
}

// plainText flattens a paragraph's text back to its lines.
func plainText(texts []comment.Text) string {
	var sb strings.Builder
	for _, t := range texts {
		switch t := t.(type) {
		case comment.Plain:
			sb.WriteString(string(t))
		case comment.Italic:
			sb.WriteString(string(t))
		case *comment.Link:
			sb.WriteString(plainText(t.Text))
		case *comment.DocLink:
			sb.WriteString(plainText(t.Text))
		}
	}
	return sb.String()
}
