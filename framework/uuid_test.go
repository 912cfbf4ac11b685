package framework_test

import (
	"regexp"
	"testing"

	"github.com/zoocurator/zoocurator/framework"
)

// TestProtectedPrefixForm checks the form of a protected prefix: _c_, a version 4 UUID
// in its 36-character form, a dash; and that two prefixes differ.
func TestProtectedPrefixForm(t *testing.T) {
	re := regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-$`)
	seen := map[string]bool{}
	for range 100 {
		p := framework.NewProtectedPrefix()
		if !re.MatchString(p) {
			t.Fatalf("protected prefix %q is not _c_<uuid v4>-", p)
		}
		if !framework.IsProtectedName(p + "lock-0000000001") {
			t.Fatalf("%q: IsProtectedName is false", p+"lock-0000000001")
		}
		if seen[p] {
			t.Fatalf("prefix %q twice", p)
		}
		seen[p] = true
	}
}
