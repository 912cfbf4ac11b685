package framework_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/zoocurator/zoocurator/framework"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path   string
		index  int    // want a *PathError at this index; -1 means valid
		reason string // substring of PathError.Reason
	}{
		// Shape.
		{"/", -1, ""},
		{"", 0, "empty path"},
		{"a", 0, "must start with '/'"},
		{"a/b", 0, "must start with '/'"},
		{"/a", -1, ""},
		{"/a/b/c", -1, ""},
		{"/a/", 2, "must not end with '/'"},
		{"//", 1, "must not end with '/'"},
		{"//a", 1, "empty node name"},
		{"/a//b", 3, "empty node name"},
		{"/a///b", 3, "empty node name"},
		{"/a/b//", 5, "must not end with '/'"},

		// Relative node names.
		{"/.", 1, "relative node name"},
		{"/..", 1, "relative node name"},
		{"/a/./b", 3, `"."`},
		{"/a/../b", 3, `".."`},
		{"/a/.", 3, "relative node name"},
		{"/a/..", 3, "relative node name"},
		{"/a/.b", -1, ""},
		{"/a/b.", -1, ""},
		{"/a..b", -1, ""},
		{"/...", -1, ""},
		{"/a/.../b", -1, ""},
		{"/.a./..b", -1, ""},

		// Reserved is still valid.
		{"/zookeeper", -1, ""},
		{"/zookeeper/quota", -1, ""},

		// Each boundary of the rejected ranges.
		{"/a\x00b", 2, "NUL"},
		{"/a\u0001", 2, "U+0001"},
		{"/a\u001f", 2, "U+001F"},
		{"/a\u0020b", -1, ""},
		{"/a\u007e", -1, ""},
		{"/a\u007f", 2, "U+007F"},
		{"/a\u0080", 2, "U+0080"},
		{"/a\u009f", 2, "U+009F"},
		{"/a\u00a0", -1, ""},
		{"/a\ud7ff", -1, ""},
		{"/a\ue000", 2, "U+E000"},
		{"/a\uf8ff", 2, "U+F8FF"},
		{"/a\uf900", -1, ""},
		{"/a\uffef", -1, ""},
		{"/a\ufff0", 2, "U+FFF0"},
		{"/a\ufffd", 2, "U+FFFD"},
		{"/a\uffff", 2, "U+FFFF"},
		{"/a\U00010000", 2, "U+10000"},
		{"/a\U0001F600", 2, "outside the Basic Multilingual Plane"},
		{"/a\U0010FFFF", 2, "U+10FFFF"},

		// Not UTF-8.
		{"/a\xffb", 2, "invalid UTF-8 byte 0xff"},
		{"/a\xc3", 2, "invalid UTF-8"},          // truncated 2-byte sequence
		{"/a\xed\xa0\x80", 2, "invalid UTF-8"},  // encoded surrogate U+D800
		{"/a\xc0\xaf", 2, "invalid UTF-8"},      // overlong '/'
		{"/é/ü/日本/Ωmega", -1, ""},               // ordinary non-ASCII
		{"/日本\x01", 7, "U+0001"},                // index is a byte offset
		{"/x/\x01/..", 3, "U+0001"},             // first problem wins
		{"/x/../\x01", 3, "relative node name"}, // first problem wins
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.path), func(t *testing.T) {
			err := framework.ValidatePath(tt.path)
			checkPathError(t, tt.path, err, tt.index, tt.reason)
		})
	}
}

func TestValidatePathSequential(t *testing.T) {
	tests := []struct {
		path   string
		index  int
		reason string
	}{
		{"/", -1, ""},
		{"/a/", -1, ""}, // ZooKeeper appends the number: /a/0000000001
		{"/a/lock-", -1, ""},
		{"/a", -1, ""},
		{"/a/.", -1, ""},  // becomes /a/.0000000001
		{"/a/..", -1, ""}, // becomes /a/..0000000001
		{"", 0, "empty path"},
		{"a/", 0, "must start with '/'"},
		{"//", 1, "empty node name"},
		{"/a//", 3, "empty node name"},
		{"/a/./", 3, "relative node name"},
		{"/a/../b-", 3, "relative node name"},
		{"/a/\u0000/", 3, "NUL"},
		{"/a\U00010000/", 2, "U+10000"},
		{"/a/\xff", 3, "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.path), func(t *testing.T) {
			err := framework.ValidatePathSequential(tt.path)
			checkPathError(t, tt.path, err, tt.index, tt.reason)
		})
	}
}

// checkPathError checks that err is nil when index is -1, and otherwise a
// *PathError for path at index whose Reason contains reason.
func checkPathError(t *testing.T, path string, err error, index int, reason string) {
	t.Helper()
	if index < 0 {
		if err != nil {
			t.Fatalf("got %v, want valid", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got nil, want an error at index %d (%s)", index, reason)
	}
	if !errors.Is(err, framework.ErrInvalidPath) {
		t.Errorf("errors.Is(%v, ErrInvalidPath) = false", err)
	}
	var pe *framework.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("got %T, want *PathError", err)
	}
	if pe.Path != path {
		t.Errorf("Path = %q, want %q", pe.Path, path)
	}
	if pe.Index != index {
		t.Errorf("Index = %d, want %d (%v)", pe.Index, index, err)
	}
	if !strings.Contains(pe.Reason, reason) {
		t.Errorf("Reason = %q, want it to contain %q", pe.Reason, reason)
	}
}

func TestPathErrorMessage(t *testing.T) {
	err := framework.ValidatePath("/a//b")
	const want = `invalid path "/a//b": empty node name at index 3`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}

	wrapped := fmt.Errorf("create: %w", err)
	if !errors.Is(wrapped, framework.ErrInvalidPath) {
		t.Errorf("errors.Is(wrapped, ErrInvalidPath) = false")
	}
	var pe *framework.PathError
	if !errors.As(wrapped, &pe) || pe.Index != 3 || pe.Reason != "empty node name" {
		t.Errorf("errors.As(wrapped) gave %+v", pe)
	}
	if errors.Is(err, errors.New("framework: invalid path")) {
		t.Errorf("PathError matches an unrelated error with the same text")
	}
}

func TestIsReservedPath(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/zookeeper", true},
		{"/zookeeper/quota", true},
		{"/zookeeper/config", true},
		{"/", false},
		{"", false},
		{"/zookeeperx", false},
		{"/zoo", false},
		{"/a/zookeeper", false},
		{"zookeeper", false},
	}
	for _, tt := range tests {
		if got := framework.IsReservedPath(tt.path); got != tt.want {
			t.Errorf("IsReservedPath(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestJoinPath(t *testing.T) {
	tests := []struct {
		parent   string
		children []string
		want     string
	}{
		{"", nil, "/"},
		{"/", nil, "/"},
		{"", []string{""}, "/"},
		{"/", []string{"/"}, "/"},
		{"/", []string{"a"}, "/a"},
		{"", []string{"a"}, "/a"},
		{"a", nil, "/a"},
		{"/a", nil, "/a"},
		{"/a/", nil, "/a"},
		{"/a", []string{"b"}, "/a/b"},
		{"/a/", []string{"/b/"}, "/a/b"},
		{"a", []string{"b", "c"}, "/a/b/c"},
		{"/a", []string{"", "b", "", "c"}, "/a/b/c"},
		{"//a//", []string{"//b//"}, "/a/b"},
		{"/a", []string{"b/c"}, "/a/b/c"},
		{"/a", []string{"/"}, "/a"},
		{"/a", []string{"lock-0000000001"}, "/a/lock-0000000001"},
	}
	for _, tt := range tests {
		if got := framework.JoinPath(tt.parent, tt.children...); got != tt.want {
			t.Errorf("JoinPath(%q, %q) = %q, want %q", tt.parent, tt.children, got, tt.want)
		}
	}
}

func TestSplitPath(t *testing.T) {
	tests := []struct {
		path string
		want []string
	}{
		{"/a/b/c", []string{"a", "b", "c"}},
		{"/a", []string{"a"}},
		{"/", nil},
		{"", nil},
		{"a/b", []string{"a", "b"}},
		{"//a//b//", []string{"a", "b"}},
	}
	for _, tt := range tests {
		got := framework.SplitPath(tt.path)
		if !slices.Equal(got, tt.want) || (tt.want == nil) != (got == nil) {
			t.Errorf("SplitPath(%q) = %#v, want %#v", tt.path, got, tt.want)
		}
	}
	for _, p := range []string{"/", "/a", "/a/b/c", "/zookeeper/quota"} {
		if got := framework.JoinPath("", framework.SplitPath(p)...); got != p {
			t.Errorf("JoinPath(SplitPath(%q)) = %q", p, got)
		}
	}
}

func TestNodeNameAndParentPath(t *testing.T) {
	tests := []struct {
		path, node, parent string
	}{
		{"/a/b", "b", "/a"},
		{"/a/b/c", "c", "/a/b"},
		{"/a", "a", "/"},
		{"/", "", ""},
		{"", "", ""},
		{"a", "a", ""},
		{"/a/", "", "/a"},
		{"/locks/_c_x-lock-0000000001", "_c_x-lock-0000000001", "/locks"},
	}
	for _, tt := range tests {
		if got := framework.NodeName(tt.path); got != tt.node {
			t.Errorf("NodeName(%q) = %q, want %q", tt.path, got, tt.node)
		}
		if got := framework.ParentPath(tt.path); got != tt.parent {
			t.Errorf("ParentPath(%q) = %q, want %q", tt.path, got, tt.parent)
		}
	}
}

func TestFixForNamespace(t *testing.T) {
	tests := []struct {
		namespace, path, want string
	}{
		{"", "/a", "/a"},
		{"", "/", "/"},
		{"", "/a/", "/a/"},
		{"/", "/a", "/a"},
		{"ns", "/a", "/ns/a"},
		{"ns", "/a/b", "/ns/a/b"},
		{"ns", "/", "/ns"},
		{"/ns", "/a", "/ns/a"},
		{"ns/", "/a", "/ns/a"},
		{"x/y", "/a", "/x/y/a"},
		{"ns", "/a/", "/ns/a/"}, // sequential create of a child of /a
		{"ns", "/a/lock-", "/ns/a/lock-"},
	}
	for _, tt := range tests {
		if got := framework.FixForNamespace(tt.namespace, tt.path); got != tt.want {
			t.Errorf("FixForNamespace(%q, %q) = %q, want %q", tt.namespace, tt.path, got, tt.want)
		}
	}
}

func TestStripNamespace(t *testing.T) {
	tests := []struct {
		namespace, path, want string
	}{
		{"", "/a", "/a"},
		{"/", "/a", "/a"},
		{"ns", "/ns/a", "/a"},
		{"ns", "/ns/a/lock-0000000001", "/a/lock-0000000001"},
		{"ns", "/ns", "/"},
		{"/ns/", "/ns/a", "/a"},
		{"x/y", "/x/y/a", "/a"},
		{"x/y", "/x/a", "/x/a"},
		{"ns", "/nsx/a", "/nsx/a"}, // not under the namespace
		{"ns", "/other", "/other"},
		{"ns", "/", "/"},
		{"ns", "", ""},
	}
	for _, tt := range tests {
		if got := framework.StripNamespace(tt.namespace, tt.path); got != tt.want {
			t.Errorf("StripNamespace(%q, %q) = %q, want %q", tt.namespace, tt.path, got, tt.want)
		}
	}
	for _, ns := range []string{"ns", "x/y"} {
		for _, p := range []string{"/", "/a", "/a/b", "/ns"} {
			if got := framework.StripNamespace(ns, framework.FixForNamespace(ns, p)); got != p {
				t.Errorf("StripNamespace(%q, FixForNamespace(%q, %q)) = %q", ns, ns, p, got)
			}
		}
	}
}

func TestSequenceSuffix(t *testing.T) {
	tests := []struct {
		name, marker, want string
	}{
		{"lock-0000000007", "lock-", "0000000007"},
		{"_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007", "lock-", "0000000007"},
		{"lock-lock-0000000001", "lock-", "0000000001"}, // last occurrence
		{"_c_x-__READ__0000000003", "__READ__", "0000000003"},
		{"other", "lock-", "other"}, // marker absent: whole name
		{"lock-", "lock-", ""},
		{"lock-0000000007", "", "lock-0000000007"},
		{"", "lock-", ""},
	}
	for _, tt := range tests {
		if got := framework.SequenceSuffix(tt.name, tt.marker); got != tt.want {
			t.Errorf("SequenceSuffix(%q, %q) = %q, want %q", tt.name, tt.marker, got, tt.want)
		}
	}
}

func TestSortBySequence(t *testing.T) {
	tests := []struct {
		name     string
		marker   string
		children []string
		want     []string
	}{
		{
			name:   "protected names sort by sequence, not by UUID",
			marker: "lock-",
			children: []string{
				"_c_ffff-lock-0000000003",
				"_c_0000-lock-0000000010",
				"_c_aaaa-lock-0000000001",
				"_c_1111-lock-0000000002",
			},
			want: []string{
				"_c_aaaa-lock-0000000001",
				"_c_1111-lock-0000000002",
				"_c_ffff-lock-0000000003",
				"_c_0000-lock-0000000010",
			},
		},
		{
			name:   "read-write lock: two markers share one sequence",
			marker: "__READ__",
			children: []string{
				"_c_a-__READ__0000000004",
				"_c_b-__READ__0000000002",
			},
			want: []string{
				"_c_b-__READ__0000000002",
				"_c_a-__READ__0000000004",
			},
		},
		{
			name:     "string order, not integer order",
			marker:   "lock-",
			children: []string{"lock-10", "lock-9", "lock-0000000001"},
			want:     []string{"lock-0000000001", "lock-10", "lock-9"},
		},
		{
			name:     "ties broken by full name",
			marker:   "lock-",
			children: []string{"b-lock-0000000001", "a-lock-0000000001", "c-lock-0000000000"},
			want:     []string{"c-lock-0000000000", "a-lock-0000000001", "b-lock-0000000001"},
		},
		{
			name:     "names without the marker sort by their whole name",
			marker:   "lock-",
			children: []string{"zzz", "lock-0000000001", "0000000000x"},
			want:     []string{"0000000000x", "lock-0000000001", "zzz"},
		},
		{
			name:     "empty and single",
			marker:   "lock-",
			children: []string{"lock-0000000001"},
			want:     []string{"lock-0000000001"},
		},
		{
			name:     "duplicates",
			marker:   "lock-",
			children: []string{"lock-0000000002", "lock-0000000001", "lock-0000000002"},
			want:     []string{"lock-0000000001", "lock-0000000002", "lock-0000000002"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.children)
			framework.SortBySequence(got, tt.marker)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	framework.SortBySequence(nil, "lock-") // must not panic
}

func TestParseSequence(t *testing.T) {
	tests := []struct {
		name    string
		want    int64
		wantErr bool
	}{
		{"lock-0000000007", 7, false},
		{"0000000000", 0, false},
		{"_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007", 7, false},
		{"__READ__0000000003", 3, false},
		{"lock-2147483647", math.MaxInt32, false},
		{"lock-1500000000", 1500000000, false}, // '-' ends the marker
		{"x10000000007", 7, false},             // last ten digits
		{"lock--2147483648", math.MinInt32, false},
		{"lock--2147483647", -2147483647, false},
		{"lock--1000000000", -1000000000, false},
		{"lock--000000005", -5, false},
		{"lock-000000005", -5, false}, // marker "lock", Java's "%010d" of -5
		{"__READ__-999999999", -999999999, false},
		{"-2147483648", math.MinInt32, false},
		{"-1500000000", -1500000000, false},
		{"-000000001", -1, false},
		{"2147483648", 0, true},
		{"lock-9999999999", 0, true},
		{"lock--2147483649", 0, true},
		{"lock-7", 0, true},
		{"lock-000000007", -7, false}, // marker "lock", nine digits after '-'
		{"lock_000000007", 0, true},   // nine digits
		{"lock-x1500000000", 1500000000, false},
		{"lock_-1500000000", -1500000000, false},
		{"lock-Z-1500000000", 1500000000, false},
		{"lock-", 0, true},
		{"", 0, true},
		{"lock-00000000x7", 0, true},
		{"lock-０000000007", 0, true}, // full-width digit is not a digit
	}
	for _, tt := range tests {
		got, err := framework.ParseSequence(tt.name)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseSequence(%q) = %d, want an error", tt.name, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSequence(%q) = %d, %v, want %d", tt.name, got, err, tt.want)
		}
	}
}

// TestParseSequenceRoundTrip formats sequence numbers the way ZooKeeper does
// (Java's "%010d" of a 32-bit int) and parses them back.
func TestParseSequenceRoundTrip(t *testing.T) {
	values := []int32{
		0, 1, 7, 999999999, 1000000000, 1500000000, math.MaxInt32,
		-1, -5, -999999999, -1000000000, -1500000000, math.MinInt32 + 1, math.MinInt32,
	}
	for _, v := range values {
		suffix := fmt.Sprintf("%010d", v)
		for _, marker := range []string{"", "lock-", "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-", "__READ__", "lease-"} {
			name := marker + suffix
			got, err := framework.ParseSequence(name)
			if err != nil || got != int64(v) {
				t.Errorf("ParseSequence(%q) = %d, %v, want %d", name, got, err, v)
			}
			if got, err := framework.ParseSequence(framework.SequenceSuffix(name, marker)); err != nil || got != int64(v) {
				t.Errorf("ParseSequence(SequenceSuffix(%q, %q)) = %d, %v, want %d", name, marker, got, err, v)
			}
		}
	}
}
