package zktest_test

import (
	"errors"
	"testing"

	"github.com/zoocurator/zoocurator/zktest"
)

// WithReconfig does not combine with peer proxies: a member added later would have no
// proxies to the others.
func TestReconfigWithPeerProxiesRefused(t *testing.T) {
	e, err := zktest.StartEnsemble(3, zktest.WithReconfig(), zktest.WithPeerProxies())
	if err == nil {
		e.Close()
		t.Fatal("no error")
	}
	if !errors.Is(err, zktest.ErrUnsupported) {
		t.Fatalf("error %v, want ErrUnsupported", err)
	}
}
