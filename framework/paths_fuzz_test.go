package framework_test

import (
	"errors"
	"slices"
	"testing"
	"unicode/utf16"

	"github.com/zoocurator/zoocurator/framework"
)

// javaValidPath is a deliberately literal reference for ValidatePath: it does
// what ZooKeeper's server does with the bytes it is sent. The bytes are
// decoded as UTF-8 into a Java string (malformed input becomes U+FFFD, which
// Go's []rune conversion does too), the string is seen as UTF-16 code units,
// and PathUtils.validatePath's loop runs over those code units.
func javaValidPath(p string) bool {
	chars := utf16.Encode([]rune(p))
	n := len(chars)
	if n == 0 || chars[0] != '/' {
		return false
	}
	if n == 1 {
		return true
	}
	if chars[n-1] == '/' {
		return false
	}
	lastc := uint16('/')
	for i := 1; i < n; lastc, i = chars[i], i+1 {
		c := chars[i]
		switch {
		case c == 0:
			return false
		case c == '/' && lastc == '/':
			return false
		case c == '.' && lastc == '.':
			if chars[i-2] == '/' && (i+1 == n || chars[i+1] == '/') {
				return false
			}
		case c == '.':
			if chars[i-1] == '/' && (i+1 == n || chars[i+1] == '/') {
				return false
			}
		case c > 0 && c <= 0x1f,
			c >= 0x7f && c <= 0x9f,
			c >= 0xd800 && c <= 0xf8ff,
			c >= 0xfff0:
			return false
		}
	}
	return true
}

// javaValidPathSequential is PathUtils.validatePath(path, true): the server
// checks the path with a digit appended.
func javaValidPathSequential(p string) bool {
	return javaValidPath(p + "1")
}

func FuzzValidatePath(f *testing.F) {
	for _, seed := range []string{
		"", "/", "//", "a", "/a", "/a/", "/a/b/c", "/a//b", "/a/./b", "/a/../b",
		"/a/.b", "/a..b", "/.", "/..", "/...", "/a/.", "/a/..",
		"/zookeeper", "/zookeeper/quota",
		"/a\x00", "/a\x01", "/a\x1f", "/a\x20", "/a\x7e", "/a\u007f", "/a\u009f", "/a\u00a0",
		"/a\ud7ff", "/a\ue000", "/a\uf8ff", "/a\uf900", "/a\uffef", "/a\ufff0", "/a\uffff",
		"/a\U00010000", "/a\xff", "/a\xed\xa0\x80", "/日本/語",
		"/locks/_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007",
	} {
		f.Add(seed)
	}

	f.Fuzz(func(t *testing.T, p string) {
		checkAgainstReference(t, "ValidatePath", p, framework.ValidatePath(p), javaValidPath(p))
		checkAgainstReference(t, "ValidatePathSequential", p, framework.ValidatePathSequential(p), javaValidPathSequential(p))

		// Nothing panics on any input.
		_ = framework.IsReservedPath(p)
		_ = framework.JoinPath(p, p, "", "/")
		names := framework.SplitPath(p)
		_ = framework.NodeName(p)
		_ = framework.ParentPath(p)
		_ = framework.FixForNamespace(p, p)
		_ = framework.StripNamespace(p, p)
		_ = framework.SequenceSuffix(p, "lock-")
		_, _ = framework.ParseSequence(p)
		framework.SortBySequence([]string{p, "lock-0000000001", p + "x"}, "lock-")

		if framework.ValidatePath(p) != nil {
			return
		}
		// Invariants of a valid path.
		if got := framework.JoinPath("", names...); got != p {
			t.Errorf("JoinPath(SplitPath(%q)) = %q", p, got)
		}
		if p != "/" {
			if got := framework.JoinPath(framework.ParentPath(p), framework.NodeName(p)); got != p {
				t.Errorf("JoinPath(ParentPath(%q), NodeName(%q)) = %q", p, p, got)
			}
			if err := framework.ValidatePath(framework.ParentPath(p)); err != nil {
				t.Errorf("parent of valid %q is invalid: %v", p, err)
			}
			if name := framework.NodeName(p); len(names) == 0 || name != names[len(names)-1] {
				t.Errorf("NodeName(%q) = %q, SplitPath = %q", p, name, names)
			}
		}
		if framework.ValidatePathSequential(p) != nil {
			t.Errorf("valid %q is refused for a sequential create", p)
		}
		for _, ns := range []string{"ns", "x/y"} {
			fixed := framework.FixForNamespace(ns, p)
			if err := framework.ValidatePath(fixed); err != nil {
				t.Errorf("FixForNamespace(%q, %q) = %q is invalid: %v", ns, p, fixed, err)
			}
			if got := framework.StripNamespace(ns, fixed); got != p {
				t.Errorf("StripNamespace(%q, %q) = %q, want %q", ns, fixed, got, p)
			}
		}
		if !slices.Equal(framework.SplitPath(framework.JoinPath("/", names...)), names) {
			t.Errorf("SplitPath(JoinPath(SplitPath(%q))) changed the names", p)
		}
	})
}

// checkAgainstReference fails unless err agrees with the reference's verdict
// and, when it is an error, is a well-formed *PathError for p.
func checkAgainstReference(t *testing.T, fn, p string, err error, refValid bool) {
	t.Helper()
	if (err == nil) != refValid {
		t.Fatalf("%s(%q) = %v, reference says valid=%v", fn, p, err, refValid)
	}
	if err == nil {
		return
	}
	if !errors.Is(err, framework.ErrInvalidPath) {
		t.Fatalf("%s(%q): errors.Is(%v, ErrInvalidPath) = false", fn, p, err)
	}
	var pe *framework.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("%s(%q) returned %T, want *PathError", fn, p, err)
	}
	if pe.Path != p || pe.Reason == "" || pe.Index < 0 || pe.Index >= max(len(p), 1) {
		t.Fatalf("%s(%q) returned malformed %#v", fn, p, pe)
	}
}

// TestValidatePathAgainstReference compares ValidatePath and
// ValidatePathSequential with the reference on every string of up to five
// pieces drawn from an alphabet of the characters that matter.
func TestValidatePathAgainstReference(t *testing.T) {
	alphabet := []string{"/", ".", "a", "\x00", "\x1f", "\u0080", "\xff", "é", "\ufff0", "\U00010000"}
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		checkAgainstReference(t, "ValidatePath", p, framework.ValidatePath(p), javaValidPath(p))
		checkAgainstReference(t, "ValidatePathSequential", p, framework.ValidatePathSequential(p), javaValidPathSequential(p))
		if depth == 0 {
			return
		}
		for _, s := range alphabet {
			walk(p+s, depth-1)
		}
	}
	walk("", 5)
}
