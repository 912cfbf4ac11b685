package framework_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/framework"
)

// TestGoroutinesInside: Inside is true on a goroutine the set runs and false elsewhere,
// including on another set's goroutine.
func TestGoroutinesInside(t *testing.T) {
	g, other := framework.NewGoroutines(), framework.NewGoroutines()
	assert.False(t, g.Inside())
	got := make(chan [2]bool)
	g.Go(func() { got <- [2]bool{g.Inside(), other.Inside()} })
	var res [2]bool
	select {
	case res = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the goroutine did not run")
	}
	assert.True(t, res[0], "on its own goroutine")
	assert.False(t, res[1], "on another set's goroutine")
}
