package framework_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/zoocurator/zoocurator/framework"
)

// FuzzSortBySequence checks the child sorting every lock relies on: the result is a
// permutation of the input, ordered by the text after the marker (never by parsing), and
// sorting again changes nothing. Its corpus is in testdata/fuzz.
func FuzzSortBySequence(f *testing.F) {
	f.Add("_c_8af4c2cf-7afe-4466-822c-1117bd03d8e4-lock-0000000002,_c_0f4c2cf0-7afe-4466-822c-1117bd03d8e4-lock-0000000001,other", "lock-")
	f.Add("__READ__0000000003,x__WRIT__0000000001,lock-lock-0000000009", "__WRIT__")
	f.Add("lease-2147483647,lease--2147483648,lease-0000000000", "lease-")
	f.Fuzz(func(t *testing.T, joined, marker string) {
		names := strings.Split(joined, ",")
		sorted := slices.Clone(names)
		framework.SortBySequence(sorted, marker)
		a, b := slices.Clone(names), slices.Clone(sorted)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("not a permutation: %q -> %q", names, sorted)
		}
		for i := 1; i < len(sorted); i++ {
			if framework.SequenceSuffix(sorted[i-1], marker) > framework.SequenceSuffix(sorted[i], marker) {
				t.Fatalf("out of order at %d: %q", i, sorted)
			}
		}
		again := slices.Clone(sorted)
		framework.SortBySequence(again, marker)
		if !slices.Equal(again, sorted) {
			t.Fatalf("sorting twice changed the order: %q -> %q", sorted, again)
		}
	})
}
