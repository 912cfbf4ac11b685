package discovery_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// A provider whose client was closed follows nothing any more: it does not go on handing
// out what it last read as if fresh (Fresh: "whether the cache can be trusted"); its
// calls fail (ErrStale or ErrClosed) rather than hand out an instance deleted since.
func TestProviderOfClosedClientIsNotFresh(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/clientclosed"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	inst := newInstance(t, "svc", "x", 1)
	require.NoError(t, od.Register(ctx, inst))
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	_, err = p.GetInstance()
	require.NoError(t, err)

	require.NoError(t, c.Close())
	require.NoError(t, od.Unregister(ctx, inst))
	assert.Eventually(t, func() bool { return !p.Cache().Fresh() }, 5*time.Second, 10*time.Millisecond,
		"the cache of a closed client says it is fresh")
	i, err := p.GetInstance()
	assert.True(t, errors.Is(err, discovery.ErrStale) || errors.Is(err, discovery.ErrClosed) || errors.Is(err, framework.ErrClosed),
		"the provider of a closed client handed out %v (deleted since), error %v", i, err)
	_ = p.Close()
	_ = d.Close()
}
