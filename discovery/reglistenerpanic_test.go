package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// A registration listener that panics (the panic recovered by the caller of Register, as
// an HTTP server recovers a handler's) leaves no registration behind that nothing can
// undo: Unregister of that instance returns within its context and its node goes, as a
// ServiceCache listener's panic leaves the cache working.
func TestRegistrationListenerPanicLeavesUnregisterWorking(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/regpanic"
	d, err := discovery.New[details](c, base, discovery.WithRegistrationListener(func(discovery.Registered) { panic("listener boom") }))
	require.NoError(t, err)
	inst := newInstance(t, "svc", "x", 1)
	func() {
		defer func() { t.Logf("Register panicked: %v", recover()) }()
		t.Logf("Register: %v", d.Register(ctx, inst))
	}()

	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = d.Unregister(uctx, inst)
	assert.NoError(t, err, "Unregister after the listener's panic")
	assert.Eventually(t, func() bool {
		st, err := other.Exists(ctx, base+"/svc/x")
		return err == nil && st == nil
	}, 10*time.Second, 20*time.Millisecond, "the instance's node is left after Unregister")
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close hangs")
	}
}
