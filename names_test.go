package zoocurator_test

// Names say what is, not how it came: a test file is named after the code or behaviour it
// checks, a test function is Test<Thing><Behaviour>, and no name or comment points at the
// issue, review or round that asked for it. History lives in the commits.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// processFileWord is a word of a test file's name (split at "_") that names the
	// process that wrote it: review (alone or with a number after it), rev and a number or
	// one letter (revq, revg), issue and a number, round and a number, regress. Words that
	// only begin alike (revoke, revocation, revision, previous, roundtrip) are not.
	processFileWord = regexp.MustCompile(`^(review[a-z0-9]*|rev[0-9][a-z0-9]*|rev[a-z]|issues?[0-9]*|round[0-9]+|regress[a-z]*)$`)
	// processNameWord is the same for a word of a Go test function's name, split at its
	// capitals with digits kept with the word before them (TestRevgFenced: Revg, Fenced).
	processNameWord = regexp.MustCompile(`^(Review[a-z]*[0-9]*|Rev[0-9]+|Rev[a-z]|Issues?[0-9]+|Round[0-9]+|Regress[a-z]*)$`)
	// processSubtest is the same in a subtest's name, and an item number leading it (two
	// numbers with a dot between them, then a hyphen).
	processSubtest = regexp.MustCompile(`(?i)\breview|\brev[0-9]|\brev[a-z]\b|\bissues?[- ]?#?[0-9]|\bround ?[0-9]|\bregress|^[0-9]+\.[0-9]+-`)
	// issueCitation is a comment citing an issue by its number: the word issue (or
	// issues), then the number, with a space, a hyphen or a # between them or nothing.
	issueCitation = regexp.MustCompile(`(?i)\bissues?[- ]?#?[0-9]`)
	nameWord      = regexp.MustCompile(`[A-Z][a-z]*[0-9]*|[0-9]+`)
)

// TestNamesSayWhatIsNotHowItCame walks every Go and Markdown file of the repository (the
// nested modules too) and fails on a test file whose name, a test function or subtest
// whose name, or a comment that says which issue, review or round it came from, and on a
// Markdown line that cites an issue by its number.
func TestNamesSayWhatIsNotHowItCame(t *testing.T) {
	fset := token.NewFileSet()
	files, docs := 0, 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			docs++
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if m := issueCitation.FindString(line); m != "" {
					t.Errorf("%s:%d: the text cites an issue (%q): say what holds", path, i+1, m)
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		isTest := strings.HasSuffix(path, "_test.go")
		if isTest {
			for _, w := range strings.Split(strings.TrimSuffix(d.Name(), "_test.go"), "_") {
				if processFileWord.MatchString(strings.ToLower(w)) {
					t.Errorf("%s: the file is named after how it came (%q), not after the code or behaviour it checks", path, w)
				}
			}
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if m := issueCitation.FindString(c.Text); m != "" {
					t.Errorf("%s: a comment cites an issue (%q): say what the code or test does", fset.Position(c.Pos()), m)
				}
			}
		}
		if !isTest {
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if word := processWord(fn.Name.Name); word != "" {
				t.Errorf("%s: %s is named after how it came (%q): name it Test<Thing><Behaviour>", fset.Position(fn.Pos()), fn.Name.Name, word)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			for _, s := range subtestNames(n) {
				if m := processSubtest.FindString(s.name); m != "" {
					t.Errorf("%s: subtest %q is named after how it came (%q): name it after what it checks", fset.Position(s.pos), s.name, m)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if docs < 5 {
		t.Fatalf("only %d Markdown files found: the walk missed the docs", docs)
	}
	if files < 500 {
		t.Fatalf("only %d Go files found: the walk missed the packages", files)
	}
}

// processWord is the first word of a Test, Fuzz, Benchmark or Example function's name
// that names the process that wrote it, or "".
func processWord(name string) string {
	for _, prefix := range []string{"Test", "Fuzz", "Benchmark", "Example"} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || (rest != "" && !unicode.IsUpper(rune(rest[0])) && rest[0] != '_') {
			continue
		}
		for _, w := range nameWord.FindAllString(rest, -1) {
			if processNameWord.MatchString(w) {
				return w
			}
		}
	}
	return ""
}

type subtest struct {
	name string
	pos  token.Pos
}

// subtestNames are the names of subtests n gives: the string literal t.Run (b.Run) is
// called with, the string of a name field in a composite literal, and the string that
// leads a row of a table written without keys (cases whose name a loop hands to t.Run).
func subtestNames(n ast.Node) []subtest {
	lit := func(e ast.Expr) (subtest, bool) {
		bl, ok := e.(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return subtest{}, false
		}
		s, err := strconv.Unquote(bl.Value)
		return subtest{s, bl.Pos()}, err == nil
	}
	switch x := n.(type) {
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" && len(x.Args) == 2 {
			if s, ok := lit(x.Args[0]); ok {
				return []subtest{s}
			}
		}
	case *ast.KeyValueExpr:
		if k, ok := x.Key.(*ast.Ident); ok && (k.Name == "name" || k.Name == "Name") {
			if s, ok := lit(x.Value); ok {
				return []subtest{s}
			}
		}
	case *ast.CompositeLit:
		// A table's rows without keys: {"name", arg, want}, the name first.
		var names []subtest
		for _, e := range x.Elts {
			if row, ok := e.(*ast.CompositeLit); ok && row.Type == nil && len(row.Elts) > 1 {
				if s, ok := lit(row.Elts[0]); ok {
					names = append(names, s)
				}
			}
		}
		return names
	}
	return nil
}

// TestNamesCheckMatchesWhatItShould pins what the name check flags and what it lets be.
func TestNamesCheckMatchesWhatItShould(t *testing.T) {
	for _, w := range []string{"review", "review28", "rev5", "rev6", "revq", "revg", "revl", "issue28", "round2", "regress"} {
		if !processFileWord.MatchString(w) {
			t.Errorf("file word %q is not flagged", w)
		}
	}
	for _, w := range []string{"revoke", "revokearm", "revocation", "revision", "revisit", "previous", "roundtrip", "round", "reverse", "queue", "ledger"} {
		if processFileWord.MatchString(w) {
			t.Errorf("file word %q is flagged", w)
		}
	}
	for _, name := range []string{"TestReview28Close", "TestReviewWatchChurn", "TestRev6Cancelled", "TestRevgFenced", "TestRevqJSON", "TestIssue28Take", "TestRound2Enter", "TestRegressFinish", "TestFinishRegression"} {
		if processWord(name) == "" {
			t.Errorf("%s is not flagged", name)
		}
	}
	for _, name := range []string{"TestRevocableLatch", "TestRevokeArm", "TestRevocationBothWays", "TestPreviousRound", "TestEnterNotInAloneByRoundBeforeItsRead", "TestRoundTrip", "TestReverseOrder", "TestParseSequenceRoundTrip", "TestTwoRounds"} {
		if w := processWord(name); w != "" {
			t.Errorf("%s is flagged (%q)", name, w)
		}
	}
	for _, s := range []string{"15.10-polled-waits", "rev5 order", "review of the close", "issue 28", "round 2"} {
		if !processSubtest.MatchString(s) {
			t.Errorf("subtest %q is not flagged", s)
		}
	}
	for _, s := range []string{"revocable-lease-node-deleted", "queued-ready-delete-spares-next-round", "previous holder", "0.5 s", "revision"} {
		if processSubtest.MatchString(s) {
			t.Errorf("subtest %q is flagged", s)
		}
	}
	for _, c := range []string{"// (issue 28.19)", "// Issue 32: the client", "// issues 8 and 21", "// issue #4", "// the issue-8 targets"} {
		if !issueCitation.MatchString(c) {
			t.Errorf("comment %q is not flagged", c)
		}
	}
	for _, c := range []string{"// an issue with the server", "// the issuer's token", "// CURATOR-650"} {
		if issueCitation.MatchString(c) {
			t.Errorf("comment %q is flagged", c)
		}
	}
}
