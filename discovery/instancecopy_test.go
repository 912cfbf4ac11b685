package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// ServiceCache.Instances "returns copies of the cached instances" (and a provider hands
// out those): a caller that changes what it got (here a payload's map) changes nothing
// the cache holds, and the next caller gets the instance as its node holds it. (Shared,
// the cache's maps are also written and read by goroutines that never synchronize.)
func TestCacheInstancesAreCopies(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/instancecopy"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "x", 1)))
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))

	got, err := p.GetInstance()
	require.NoError(t, err)
	got.Payload.Metadata["k"] = "changed by a caller"
	assert.Equal(t, "v", p.Cache().Instances()[0].Payload.Metadata["k"], "the cache's instance was changed through the copy the provider handed out")
	again, err := p.GetInstance()
	require.NoError(t, err)
	assert.Equal(t, "v", again.Payload.Metadata["k"], "the next caller got the instance as another caller changed it, not as its node holds it")
	require.NoError(t, p.Close())
}
