package zoocurator_test

// The README is what a newcomer reads in ten minutes, and every link in it and in docs/
// leads somewhere inside the repository: a user of the module has this tree and nothing
// beside it.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is the README's bound: past it, move text into docs/.
const readmeMaxLines = 300

// docFiles are the Markdown files whose links are checked: the README and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines, want fewer than %d: move the detail into docs/ and link it", n, readmeMaxLines)
	}
}

var (
	fence    = regexp.MustCompile("(?ms)^```.*?^```[^\n]*$")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	link     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	refLink  = regexp.MustCompile(`(?m)^\s*\[[^\]]+\]:\s*(\S+)`)
	heading  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	testName = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")
	repoPath = regexp.MustCompile("`((?:[a-z0-9_]+/)+[A-Za-z0-9_.]*)`")
)

// TestDocLinksResolve checks every relative link of README.md and docs/*.md: it names a
// file or directory inside the repository (never above it, as ../shared/... would), and
// its #anchor, if any, a heading of the Markdown file it names. Links to the web are not
// followed.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.Contains(text, "../shared") {
			t.Errorf("%s mentions ../shared, which a user of the module does not have", file)
		}
		prose := codeSpan.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
		var targets []string
		for _, m := range link.FindAllStringSubmatch(prose, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range refLink.FindAllStringSubmatch(prose, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				abs, err := filepath.Abs(dest)
				if err != nil {
					t.Fatal(err)
				}
				if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					t.Errorf("%s: link %q leads outside the repository", file, target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: %v", file, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: link %q has an anchor into a file that is not Markdown", file, target)
				continue
			}
			if !hasAnchor(t, dest, anchor) {
				t.Errorf("%s: link %q: no heading of %s has the anchor #%s", file, target, dest, anchor)
			}
		}
	}
}

// hasAnchor reports whether a heading of the Markdown file makes the anchor, as GitHub
// makes them: lower case, punctuation dropped, spaces as hyphens, -1, -2... for repeats.
func hasAnchor(t *testing.T, file, anchor string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			seen[slug]++
			slug = slug + "-" + string(rune('0'+n))
		} else {
			seen[slug] = 1
		}
		if slug == anchor {
			return true
		}
	}
	return false
}

func slugify(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocNamesExist checks that the test names and the repository paths (a package, a
// file: `recipes/mutex`, `reliability/queue_test.go`) README.md and docs/*.md name in code
// spans exist: a test renamed or a file moved leaves no stale pointer behind.
func TestDocNamesExist(t *testing.T) {
	tests := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`).FindAllStringSubmatch(string(b), -1) {
				tests[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testName.FindAllStringSubmatch(string(b), -1) {
			if !tests[m[1]] {
				t.Errorf("%s names %s, which is no test in the repository", file, m[1])
			}
		}
		for _, m := range repoPath.FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.FromSlash(m[1])); err != nil {
				t.Errorf("%s names %s: %v", file, m[1], err)
			}
		}
	}
}
