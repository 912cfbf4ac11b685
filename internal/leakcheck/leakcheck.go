// Package leakcheck fails a test that leaves goroutines of this module or of
// go-zookeeper running after it ends.
package leakcheck

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// watched are the packages whose goroutines must not outlive a test.
var watched = []string{"github.com/zoocurator/zoocurator/", "github.com/go-zookeeper/zk."}

// ignored are goroutines that belong to the test harness itself.
var ignored = []string{"zoocurator/zktest.", "zoocurator/internal/curatortest.", "leakcheck."}

// Check registers a cleanup (run after the test's other cleanups, so after clients are
// closed) that waits up to 5 s for the goroutines started during the test to end, and
// fails the test with their stacks if some do not. Call it first in a test.
func Check(t testing.TB) {
	t.Helper()
	before := map[string]bool{}
	for _, g := range goroutines() {
		before[header(g)] = true
	}
	t.Cleanup(func() {
		var leaked []string
		for deadline := time.Now().Add(5 * time.Second); ; {
			leaked = leaked[:0]
			for _, g := range goroutines() {
				if !before[header(g)] && interesting(g) {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(leaked) > 0 {
			t.Errorf("leakcheck: %d goroutine(s) leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}

func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Split(string(buf), "\n\n")
}

// header is "goroutine N [state]:" without the state, which changes.
func header(g string) string {
	line, _, _ := strings.Cut(g, "\n")
	id, _, _ := strings.Cut(line, " [")
	return id
}

func interesting(g string) bool {
	for _, s := range ignored {
		if strings.Contains(g, s) {
			return false
		}
	}
	for _, s := range watched {
		if strings.Contains(g, s) {
			return true
		}
	}
	return false
}
