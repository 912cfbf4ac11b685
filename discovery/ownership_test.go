package discovery_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// gatedPayload is a payload whose marshalling (in Register and Update) waits at a gate
// when its N is the gate's: a test holds an Update there, after it looked its
// registration up and before it writes.
type gatedPayload struct{ N int }

var marshalGate struct {
	mu      sync.Mutex
	n       int
	reached chan struct{}
	open    chan struct{}
}

func armMarshalGate(n int) (reached, open chan struct{}) {
	marshalGate.mu.Lock()
	defer marshalGate.mu.Unlock()
	marshalGate.n, marshalGate.reached, marshalGate.open = n, make(chan struct{}), make(chan struct{})
	return marshalGate.reached, marshalGate.open
}

func (p gatedPayload) MarshalJSON() ([]byte, error) {
	marshalGate.mu.Lock()
	n, reached, open := marshalGate.n, marshalGate.reached, marshalGate.open
	if n == p.N && n != 0 {
		marshalGate.n = 0
	} else {
		reached = nil
	}
	marshalGate.mu.Unlock()
	if reached != nil {
		close(reached)
		<-open
	}
	return json.Marshal(struct{ N int }{p.N})
}

// An Update that looked its registration up before an Unregister
// (or Close) forgot it, and writes while the Unregister deletes (here: between the
// delete's read of the node and its delete), must not leave the Static node there for
// good (the delete failed with BadVersion, and nothing keeps the node any more).
func TestUpdateRacingUnregisterLeavesNoNode(t *testing.T) {
	for _, how := range []string{"Unregister", "Close"} {
		t.Run(how, func(t *testing.T) {
			leakcheck.Check(t)
			connect := shared(t)
			var armed atomic.Bool
			var hookOnce sync.Once
			var onDelete func()
			c := testutil.Connect(t, connect, framework.WithRequestHook(func(op string) {
				if op == "delete" && armed.Load() {
					hookOnce.Do(onDelete)
				}
			}))
			other := testutil.Connect(t, connect)
			ctx := testutil.Context(t, 60*time.Second)
			base := "/disc/upd-unreg-" + how
			d, err := discovery.New[gatedPayload](c, base)
			require.NoError(t, err)
			defer d.Close()
			mk := func(n int) *discovery.Instance[gatedPayload] {
				inst, err := discovery.NewInstance("svc", gatedPayload{N: n}, discovery.WithID("s"),
					discovery.WithServiceType(discovery.Static))
				require.NoError(t, err)
				return inst
			}
			require.NoError(t, d.Register(ctx, mk(1)))

			reached, open := armMarshalGate(2)
			upd := testutil.Go(ctx, func(ctx context.Context) error { return d.Update(ctx, mk(2)) })
			testutil.WaitClosed(t, reached, 10*time.Second, "the Update holding its registration")
			var updErr error
			onDelete = func() { // the delete's request is about to go: let the Update write first
				close(open)
				updErr = testutil.Result(t, upd, 20*time.Second, "the Update")
			}
			armed.Store(true)
			if how == "Unregister" {
				assert.NoError(t, d.Unregister(ctx, mk(1)))
			} else {
				assert.NoError(t, d.Close())
			}
			if updErr != nil {
				assert.ErrorIs(t, updErr, discovery.ErrNotRegistered, "an Update of an instance being unregistered")
			}
			st, err := other.Exists(ctx, base+"/svc/s")
			require.NoError(t, err)
			assert.Nil(t, st, "the unregistered Static instance's node is left behind (Update: %v)", updErr)
			if st != nil {
				_ = other.Delete(ctx, base+"/svc/s")
			}
		})
	}
}

// Once another registration of the id (another process) has taken
// the node (the last registration wins), an Update of ours must not write into its node.
func TestUpdateDoesNotWriteAnotherRegistrationsNode(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c1 := testutil.Connect(t, connect)
	c2 := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/upd-other"
	d1, err := discovery.New[details](c1, base)
	require.NoError(t, err)
	defer d1.Close()
	d2, err := discovery.New[details](c2, base)
	require.NoError(t, err)
	defer d2.Close()
	require.NoError(t, d1.Register(ctx, newInstance(t, "svc", "x", 1)))
	require.NoError(t, d2.Register(ctx, newInstance(t, "svc", "x", 2)))
	st, err := c2.Exists(ctx, base+"/svc/x")
	require.NoError(t, err)
	require.Equal(t, c2.SessionID(), st.EphemeralOwner, "the second registration replaced the node")

	_ = d1.Update(ctx, newInstance(t, "svc", "x", 7))
	got, err := d2.QueryForInstance(ctx, "svc", "x")
	require.NoError(t, err)
	assert.Equal(t, 2, got.Port, "the Update wrote into the other registration's node")
	st2, err := c2.Exists(ctx, base+"/svc/x")
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, st2.Czxid, "the other registration's node is still there")

	require.NoError(t, d1.Close())
	got, err = d2.QueryForInstance(ctx, "svc", "x")
	require.NoError(t, err, "closing the first registry leaves the other registration's node")
	assert.Equal(t, 2, got.Port)
	require.NoError(t, d2.Close())
	testutil.RequireNoChildren(t, connect, base+"/svc")
}

// Two registries on one client (one session), the same id: the
// second Register replaces the node as Register's doc says (Curator's last registration
// wins); ownership is per instance, so closing the first leaves the second's node.
func TestTwoRegistriesOneClientSameID(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/two-regs"
	regs := newRegistrations()
	d1, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d1.Close()
	d2, err := discovery.New[details](c, base, discovery.WithRegistrationListener(regs.listen))
	require.NoError(t, err)
	defer d2.Close()
	require.NoError(t, d1.Register(ctx, newInstance(t, "svc", "x", 1)))
	first, err := c.Exists(ctx, base+"/svc/x")
	require.NoError(t, err)

	require.NoError(t, d2.Register(ctx, newInstance(t, "svc", "x", 2)))
	got, err := d2.QueryForInstance(ctx, "svc", "x")
	require.NoError(t, err)
	assert.Equal(t, 2, got.Port, "the second Register replaced the node")
	second, err := c.Exists(ctx, base+"/svc/x")
	require.NoError(t, err)
	assert.NotEqual(t, first.Czxid, second.Czxid, "the second Register made its own node")
	assert.Len(t, regs.list(), 1, "the second Register created its node")

	require.NoError(t, d1.Close())
	got, err = d2.QueryForInstance(ctx, "svc", "x")
	require.NoError(t, err, "closing the first registry deleted the second's node")
	assert.Equal(t, 2, got.Port)
	require.NoError(t, d2.Close())
	testutil.RequireNoChildren(t, connect, base+"/svc")
}

// A node Curator wrote with &, < and > in its strings is what Go
// writes for the same instance, byte for byte (Go's encoding/json escapes them by
// default; Jackson does not).
func TestInteropHTMLCharactersAsJacksonWritesThem(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	ctx := testutil.Context(t, 120*time.Second)
	java := curatortest.Start(t, connect)
	c := testutil.Connect(t, connect)
	const base = "/disc/interop-html"
	_, err := java.Do(ctx, "disc.new jd %s details", base)
	require.NoError(t, err)
	ans, err := java.Do(ctx, "disc.register jd svc a&b<c>.example 8080 - DYNAMIC {scheme}://{address}:{port}/x?a=1&b=<2> fish&chips<b> k=<v>&")
	require.NoError(t, err)
	fromJava := decodeJava[details](t, ans)[0]
	raw, _, err := c.GetData(ctx, base+"/svc/"+fromJava.ID)
	require.NoError(t, err)
	require.Contains(t, string(raw), "fish&chips<b>", "Curator writes them as they are")
	mine, err := fromJava.Marshal()
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(mine), "Go writes the bytes Curator writes")
	_, err = java.Do(ctx, "disc.close jd")
	require.NoError(t, err)
	testutil.RequireNoChildren(t, connect, base+"/svc")
}

// A node replaced in one transaction (here: by a second registration of the
// id, which takes the path as Curator's last registration does; the dead-generation
// replacement is the same transaction) is never missing from a cache: the cache hears
// its removal and then the new node's addition, and must not drop the instance in
// between. Each CacheChanged is checked on the cache's own goroutine, so no moment is
// missed.
func TestReplacedNodeNeverMissingFromCache(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c1 := testutil.Connect(t, connect)
	c2 := testutil.Connect(t, connect)
	c3 := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/replaced-cache"
	d1, err := discovery.New[details](c1, base)
	require.NoError(t, err)
	defer d1.Close()
	d2, err := discovery.New[details](c2, base)
	require.NoError(t, err)
	defer d2.Close()
	d3, err := discovery.New[details](c3, base)
	require.NoError(t, err)
	defer d3.Close()
	require.NoError(t, d1.Register(ctx, newInstance(t, "svc", "x", 1)))
	sc, err := d3.NewCache("svc")
	require.NoError(t, err)
	var mu sync.Mutex
	var missing, sawNew int
	var cache *discovery.ServiceCache[details]
	sc.AddListener(func(ev discovery.CacheEvent) {
		if ev.Type != discovery.CacheChanged {
			return
		}
		all := cache.Instances()
		mu.Lock()
		defer mu.Unlock()
		if len(all) == 0 {
			missing++
		}
		for _, i := range all {
			if i.Port == 2 {
				sawNew++
			}
		}
	})
	cache = sc
	require.NoError(t, sc.Start(ctx))
	require.Len(t, sc.Instances(), 1)

	require.NoError(t, d2.Register(ctx, newInstance(t, "svc", "x", 2)))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sawNew > 0
	}, 10*time.Second, 5*time.Millisecond, "the cache sees the new node")
	mu.Lock()
	assert.Zero(t, missing, "the cache dropped the replaced instance before its new node's addition")
	mu.Unlock()
	require.NoError(t, sc.Close())
}

// A version is not an identity. Between Update's
// read of its node and its write, the node is deleted and made again by someone else (at
// version 0, as ours was): the versioned write lands on that node. ZooKeeper cannot take
// it back; Update must say so (the returned Stat's czxid is not its node's), never nil.
func TestUpdateOnAReplacedNodeReportsConflict(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/disc/upd-replaced/svc/x"
	var armed atomic.Bool
	hookErr := make(chan error, 1)
	c := testutil.Connect(t, connect, framework.WithRequestHook(func(op string) {
		if op == "setData" && armed.CompareAndSwap(true, false) {
			err := other.Delete(ctx, path)
			if err == nil {
				_, err = other.Create(ctx, path, []byte("someone else's"), framework.WithMode(framework.Ephemeral))
			}
			hookErr <- err
		}
	}))
	d, err := discovery.New[details](c, "/disc/upd-replaced")
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "x", 1)))

	armed.Store(true)
	err = d.Update(ctx, newInstance(t, "svc", "x", 2))
	require.NoError(t, <-hookErr)
	assert.ErrorIs(t, err, discovery.ErrConflict, "the write went into another node")
	require.NoError(t, d.Close())
	st, err := other.Exists(ctx, path)
	require.NoError(t, err)
	assert.NotNil(t, st, "Close leaves the other node alone")
	require.NoError(t, other.Delete(ctx, path))
}
