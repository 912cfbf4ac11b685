package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// Sticky "keeps returning the instance it picked (by master) as long as that instance is
// available (same name, id and data)", and the instances a provider hands out are copies
// ("a caller changing what it got ... changes nothing another caller gets"). A caller that
// changes the instance it got (its own copy) must not make the provider move on from an
// instance that is still registered, unchanged.
func TestStickyProviderKeepsItsInstanceWhenACallerChangesItsCopy(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[details](c, "/disc/stickycopy")
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "a", 1)))
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "b", 2)))
	p, err := discovery.NewProvider(d, "svc", discovery.WithStrategy(discovery.Sticky(discovery.RoundRobin())))
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	require.Len(t, p.Cache().Instances(), 2)

	first, err := p.GetInstance()
	require.NoError(t, err)
	firstID := first.ID
	first.Payload.Metadata["k"] = "the caller's own note" // the caller's copy

	again, err := p.GetInstance()
	require.NoError(t, err)
	require.Equal(t, firstID, again.ID, "sticky moved on from %s, still registered and unchanged, because a caller changed its own copy", firstID)
	require.NoError(t, p.Close())
}
