package locks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zoocurator/zoocurator/framework"
)

// TestPositionAgreesWithSorted: the one-pass position of a node (used by the mutex's
// wait) is its index in Sorted, and the node ahead is the one before it in Sorted; for
// queues in random order, with protected and plain names.
func TestPositionAgreesWithSorted(t *testing.T) {
	c, err := framework.New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Client: c, Path: "/p", LockName: "lock-", MaxLeases: 1, FastHandoff: true})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + rng.IntN(50)
		var kids []string
		for i := range n {
			seq := fmt.Sprintf("lock-%010d", rng.IntN(1000)*100+i) // unique sequences
			if rng.IntN(2) == 0 {
				kids = append(kids, framework.NewProtectedPrefix()+seq)
			} else {
				kids = append(kids, seq)
			}
		}
		sorted := l.Sorted(kids)
		for i, name := range sorted {
			ours, ahead, found := l.position(kids, name)
			if !found || ours != i {
				t.Fatalf("round %d: %s: position %d (found %v), Sorted index %d", round, name, ours, found, i)
			}
			want := ""
			if i > 0 {
				want = sorted[i-1]
			}
			if ahead != want {
				t.Fatalf("round %d: %s: ahead %q, Sorted has %q", round, name, ahead, want)
			}
		}
		if _, _, found := l.position(kids, "lock-9999999999"); found {
			t.Fatal("a name not among the children is found")
		}
		if !slices.IsSortedFunc(sorted, func(a, b string) int {
			return cmpString(framework.SequenceSuffix(a, "lock-"), framework.SequenceSuffix(b, "lock-"))
		}) {
			t.Fatal("Sorted is not in sequence order")
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
