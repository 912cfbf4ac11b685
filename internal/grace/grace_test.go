package grace_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/grace"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
)

type key struct{}

func TestAfterOutlivesItsParentByTheGrace(t *testing.T) {
	leakcheck.Check(t)
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	g, stop := grace.After(parent, time.Hour)
	defer stop()
	cancelParent()
	assert.NoError(t, g.Err(), "ended with its parent")
	assert.Equal(t, "v", g.Value(key{}), "the parent's values")
	stop()
	assert.ErrorIs(t, g.Err(), context.Canceled, "stop ends it")
}

func TestAfterEndsOnceTheGraceHasPassed(t *testing.T) {
	leakcheck.Check(t)
	parent, cancelParent := context.WithCancel(context.Background())
	g, stop := grace.After(parent, time.Millisecond)
	defer stop()
	select {
	case <-g.Done():
		t.Fatal("ended while its parent lives")
	default:
	}
	cancelParent()
	select {
	case <-g.Done():
	case <-time.After(10 * time.Second):
		require.Fail(t, "not ended 10 s after its parent, with a grace of 1 ms")
	}
}
