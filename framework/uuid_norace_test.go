//go:build !race

package framework_test

import (
	"testing"

	"github.com/zoocurator/zoocurator/framework"
)

// NewProtectedPrefix allocates once (the string). Not under the race detector, whose
// instrumentation moves the UUID's buffer to the heap (2 allocations): `make test` runs
// with -race, so this runs with `go test ./framework` (and in the benchmark's numbers).
func TestProtectedPrefixAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = framework.NewProtectedPrefix() }); n > 1 {
		t.Errorf("NewProtectedPrefix allocates %v times, want 1", n)
	}
}
