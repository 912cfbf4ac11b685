package discovery_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// One ZooKeeper for the tests that inject no fault (each uses its own base path).
var (
	srvOnce sync.Once
	srv     *zktest.Server
	srvErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if srv != nil {
		_ = srv.Close()
	}
	os.Exit(code)
}

func shared(t *testing.T) string {
	t.Helper()
	srvOnce.Do(func() { srv, srvErr = zktest.StartServer() })
	if srvErr != nil {
		if errors.Is(srvErr, zktest.ErrUnavailable) && testing.Short() {
			t.Skipf("%v (skipped under -short)", srvErr)
		}
		t.Fatalf("%v", srvErr)
	}
	return srv.ConnectString()
}

// registrations collects what a registration listener hears.
type registrations struct {
	mu  sync.Mutex
	all []discovery.Registered
	ch  chan discovery.Registered
}

func newRegistrations() *registrations {
	return &registrations{ch: make(chan discovery.Registered, 100)}
}

func (r *registrations) listen(ev discovery.Registered) {
	r.mu.Lock()
	r.all = append(r.all, ev)
	r.mu.Unlock()
	r.ch <- ev
}

func (r *registrations) list() []discovery.Registered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

func (r *registrations) wait(t *testing.T, d time.Duration) discovery.Registered {
	t.Helper()
	select {
	case ev := <-r.ch:
		return ev
	case <-time.After(d):
		t.Fatalf("no registration within %v", d)
		return discovery.Registered{}
	}
}

func newInstance(t *testing.T, name, id string, port int, opts ...discovery.InstanceOption) *discovery.Instance[details] {
	t.Helper()
	opts = append([]discovery.InstanceOption{discovery.WithID(id), discovery.WithAddress("10.0.0.1"), discovery.WithPort(port),
		discovery.WithURISpec("{scheme}://{address}:{port}")}, opts...)
	inst, err := discovery.NewInstance(name, details{Description: id, Metadata: map[string]string{"k": "v"}}, opts...)
	require.NoError(t, err)
	return inst
}

func TestRegisterQueryUnregister(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[details](c, "/disc/basic")
	require.NoError(t, err)
	defer d.Close()

	for _, st := range []discovery.ServiceType{discovery.Dynamic, discovery.Static, discovery.Permanent, discovery.DynamicSequential} {
		inst := newInstance(t, "svc", "id-"+string(st), 1000, discovery.WithServiceType(st))
		require.NoError(t, d.Register(ctx, inst))
		assert.ErrorIs(t, d.Register(ctx, inst), discovery.ErrAlreadyRegistered)
	}
	names, err := d.QueryForNames(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc"}, names)

	kids := testutil.Children(t, connect, "/disc/basic/svc")
	require.Len(t, kids, 4)
	assert.Regexp(t, `^id-DYNAMIC_SEQUENTIAL[0-9]{10}$`, kids[1])
	for _, k := range kids {
		_, stat, err := c.GetData(ctx, "/disc/basic/svc/"+k)
		require.NoError(t, err)
		dynamic := k == "id-DYNAMIC" || k != "id-STATIC" && k != "id-PERMANENT"
		assert.Equal(t, dynamic, stat.EphemeralOwner == c.SessionID(), k)
	}
	parent, err := c.Exists(ctx, "/disc/basic/svc")
	require.NoError(t, err)
	assert.Zero(t, parent.EphemeralOwner)

	all, err := d.QueryForInstances(ctx, "svc")
	require.NoError(t, err)
	require.Len(t, all, 4)
	got, err := d.QueryForInstance(ctx, "svc", "id-STATIC")
	require.NoError(t, err)
	assert.Equal(t, newInstance(t, "svc", "id-STATIC", 1000, discovery.WithServiceType(discovery.Static)).Payload, got.Payload)
	assert.Equal(t, "http://10.0.0.1:1000", got.BuildURI(nil))
	_, err = d.QueryForInstance(ctx, "svc", "nope")
	assert.ErrorIs(t, err, discovery.ErrNoInstance)
	_, err = d.QueryForInstances(ctx, "a/b")
	assert.ErrorIs(t, err, discovery.ErrInvalidName)

	// Update changes the node's data.
	upd := newInstance(t, "svc", "id-DYNAMIC", 2000)
	require.NoError(t, d.Update(ctx, upd))
	got, err = d.QueryForInstance(ctx, "svc", "id-DYNAMIC")
	require.NoError(t, err)
	assert.Equal(t, 2000, got.Port)
	assert.ErrorIs(t, d.Update(ctx, newInstance(t, "svc", "unknown", 1)), discovery.ErrNotRegistered)
	assert.ErrorIs(t, d.Update(ctx, newInstance(t, "other", "id-DYNAMIC", 1)), discovery.ErrInvalidInstance)

	// Unregister deletes the node, whatever its type (the sequential one by its path).
	for _, inst := range d.Registered() {
		require.NoError(t, d.Unregister(ctx, inst))
	}
	assert.ErrorIs(t, d.Unregister(ctx, upd), discovery.ErrNotRegistered)
	testutil.RequireNoChildren(t, connect, "/disc/basic/svc")
	require.NoError(t, d.Close())
	require.NoError(t, d.Close())
	assert.ErrorIs(t, d.Register(ctx, upd), discovery.ErrClosed)
}

func TestBadInput(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	_, err := discovery.New[int](nil, "/x")
	assert.ErrorIs(t, err, framework.ErrInvalidArgument, "a zero down-instance policy")
	for _, p := range []string{"", "x", "/x/", "/", "/a//b"} {
		_, err := discovery.New[int](c, p)
		assert.Error(t, err, p)
	}
	d, err := discovery.New[any](c, "/disc/bad")
	require.NoError(t, err)
	defer d.Close()
	assert.ErrorIs(t, d.Register(ctx, nil), discovery.ErrInvalidInstance)
	assert.ErrorIs(t, d.Register(ctx, &discovery.Instance[any]{Name: "a/b", ID: "x", ServiceType: discovery.Dynamic}), discovery.ErrInvalidName)
	assert.ErrorIs(t, d.Register(ctx, &discovery.Instance[any]{Name: "a", ID: "x\x01", ServiceType: discovery.Dynamic}), discovery.ErrInvalidName)
	assert.ErrorIs(t, d.Register(ctx, &discovery.Instance[any]{Name: "a", ID: "x"}), discovery.ErrInvalidInstance, "no service type")
	fn, err := discovery.NewInstance[any]("a", func() {})
	require.NoError(t, err)
	assert.ErrorIs(t, d.Register(ctx, fn), discovery.ErrInvalidInstance, "a payload that does not marshal")
	big, err := discovery.NewInstance[any]("a", string(make([]byte, framework.DefaultMaxPacketSize)))
	require.NoError(t, err)
	assert.ErrorIs(t, d.Register(ctx, big), framework.ErrDataTooLarge)
	_, err = d.NewCache("..")
	assert.ErrorIs(t, err, discovery.ErrInvalidName)
	_, err = discovery.NewProvider(d, "a", discovery.WithDownInstancePolicy(discovery.DownInstancePolicy{}))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument, "a zero down-instance policy")
	assert.Empty(t, testutil.Children(t, connect, "/disc/bad"), "nothing registered")
}

// A node whose data is not an instance: queries name it, the cache skips it and says so.
func TestNodeNotAnInstance(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	d, err := discovery.New[details](c, "/disc/garbage")
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "good", 1)))
	_, err = c.Create(ctx, "/disc/garbage/svc/junk", []byte("not json"))
	require.NoError(t, err)
	defer c.Delete(context.WithoutCancel(ctx), "/disc/garbage/svc/junk")

	all, err := d.QueryForInstances(ctx, "svc")
	require.Len(t, all, 1)
	assert.Equal(t, "good", all[0].ID)
	var ie *discovery.InstanceError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "/disc/garbage/svc/junk", ie.Path)
	assert.ErrorIs(t, err, discovery.ErrNotInstance)
	assert.Contains(t, err.Error(), "/disc/garbage/svc/junk")
	_, err = d.QueryForInstance(ctx, "svc", "junk")
	require.ErrorAs(t, err, &ie)

	sc, err := d.NewCache("svc")
	require.NoError(t, err)
	events := make(chan discovery.CacheEvent, 100)
	sc.AddListener(func(ev discovery.CacheEvent) { events <- ev })
	require.NoError(t, sc.Start(ctx))
	require.Len(t, sc.Instances(), 1)
	ev := waitBad(t, events, "/disc/garbage/svc/junk")
	require.ErrorAs(t, ev.Err, &ie)
	// A good instance's node overwritten with junk leaves the cache, reported.
	_, err = c.SetData(ctx, "/disc/garbage/svc/good", []byte(`{"name":"svc"}`), -1)
	require.NoError(t, err)
	waitBad(t, events, "/disc/garbage/svc/good")
	assert.Empty(t, sc.Instances())
	require.NoError(t, sc.Close())
}

// waitBad waits for the cache's CacheBadInstance event about path.
func waitBad(t *testing.T, events <-chan discovery.CacheEvent, path string) discovery.CacheEvent {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev := <-events:
			if ev.Type == discovery.CacheBadInstance && ev.Path == path {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no CacheBadInstance event for %s", path)
		}
	}
}

// Someone deletes a registered instance's node: it is back, once, owned by our session.
func TestReRegisteredAfterDelete(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	regs := newRegistrations()
	c := testutil.Connect(t, connect)
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	d, err := discovery.New[details](c, "/disc/deleted", discovery.WithRegistrationListener(regs.listen))
	require.NoError(t, err)
	defer d.Close()
	for _, st := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
		inst := newInstance(t, "svc", "i-"+string(st), 1, discovery.WithServiceType(st))
		require.NoError(t, d.Register(ctx, inst))
		first := regs.wait(t, 10*time.Second)
		assert.False(t, first.Again)
		require.NoError(t, other.Delete(ctx, first.Path))
		again := regs.wait(t, 10*time.Second)
		assert.Equal(t, discovery.Registered{Name: "svc", ID: inst.ID, Path: first.Path, Again: true}, again)
		_, stat, err := other.GetData(ctx, first.Path)
		require.NoError(t, err)
		assert.Equal(t, st == discovery.Dynamic, stat.EphemeralOwner == c.SessionID())
	}
	require.NoError(t, d.Close())
	assert.Len(t, regs.list(), 4, "each instance created twice, no more")
	testutil.RequireNoChildren(t, connect, "/disc/deleted/svc")
}

// The session expires behind a stalled proxy: once the client has a new session the
// instance is registered again, exactly once, owned by the new session.
func TestReRegisteredAfterSessionExpiry(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	regs := newRegistrations()
	d, err := discovery.New[details](c, "/disc/expiry", discovery.WithRegistrationListener(regs.listen))
	require.NoError(t, err)
	defer d.Close()
	seq := newInstance(t, "svc", "seq-", 1, discovery.WithServiceType(discovery.DynamicSequential))
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "dyn", 1)))
	require.NoError(t, d.Register(ctx, seq))
	regs.wait(t, 10*time.Second)
	regs.wait(t, 10*time.Second)
	sid := c.SessionID()
	states := testutil.States(c)

	proxy.Stall()
	require.Eventually(t, func() bool {
		sessions, err := zktest.Sessions(server.Addr())
		return err == nil && !slices.Contains(sessions, sid)
	}, 30*time.Second, 50*time.Millisecond, "the server must expire session 0x%x", sid)
	assert.Empty(t, testutil.Children(t, server.ConnectString(), "/disc/expiry/svc"), "the expired session's instances are gone")
	proxy.Heal()
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	back := time.Now()
	a, b := regs.wait(t, 30*time.Second), regs.wait(t, 30*time.Second)
	t.Logf("both instances back %v after the reconnection", time.Since(back))
	assert.True(t, a.Again && b.Again)
	assert.NotEqual(t, sid, c.SessionID())
	kids := testutil.Children(t, server.ConnectString(), "/disc/expiry/svc")
	require.Len(t, kids, 2, "exactly one node per instance: %v", kids)
	for _, k := range kids {
		_, stat, err := other.GetData(ctx, "/disc/expiry/svc/"+k)
		require.NoError(t, err)
		assert.Equal(t, c.SessionID(), stat.EphemeralOwner)
	}
	// A round trip through the keeper (an update) after which no other registration
	// came: exactly once.
	require.NoError(t, d.Update(ctx, newInstance(t, "svc", "dyn", 2)))
	require.NoError(t, c.Sync(ctx, "/disc/expiry/svc"))
	assert.Len(t, regs.list(), 4)
	require.NoError(t, d.Close())
	testutil.RequireNoChildren(t, server.ConnectString(), "/disc/expiry/svc")
}

func TestCacheAndProvider(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	d, err := discovery.New[details](c, "/disc/provider")
	require.NoError(t, err)
	defer d.Close()

	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	_, err = p.GetInstance()
	assert.ErrorIs(t, err, discovery.ErrNotStarted)
	changed := make(chan struct{}, 100)
	p.Cache().AddListener(func(ev discovery.CacheEvent) {
		if ev.Type == discovery.CacheChanged {
			changed <- struct{}{}
		}
	})
	require.NoError(t, p.Start(ctx))
	_, err = p.GetInstance()
	assert.ErrorIs(t, err, discovery.ErrNoInstance)
	assert.ErrorContains(t, err, "none registered", "the error tells a service that is gone from one held back")

	a, b := newInstance(t, "svc", "a", 1), newInstance(t, "svc", "b", 2)
	off := newInstance(t, "svc", "c", 3, discovery.WithEnabled(false))
	for _, inst := range []*discovery.Instance[details]{a, b, off} {
		require.NoError(t, d.Register(ctx, inst))
	}
	require.Eventually(t, func() bool { return len(p.Cache().Instances()) == 3 }, 10*time.Second, 5*time.Millisecond)
	assert.True(t, p.Cache().Fresh())

	// Round robin over the enabled ones, in node order.
	var ids []string
	for range 4 {
		i, err := p.GetInstance()
		require.NoError(t, err)
		ids = append(ids, i.ID)
	}
	assert.Equal(t, []string{"a", "b", "a", "b"}, ids)
	// GetInstance answers from the cache: no request. The cache may still be reading
	// after its third instance (a listing the last registration's watch asked for), so
	// a pass counts only when no request at all came during it; a GetInstance that
	// sends one never gets such a pass.
	assert.Eventually(t, func() bool {
		before := c.Requests()
		for range 4 {
			if _, err := p.GetInstance(); err != nil {
				return false
			}
		}
		return c.Requests() == before
	}, 10*time.Second, 20*time.Millisecond, "GetInstance answers from the cache: no request")

	// Down-instance policy: two errors take b out until 30 s after the first.
	now := time.Unix(1000, 0)
	discovery.SetClock(p, func() time.Time { return now })
	p.NoteError(b)
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	assert.Len(t, all, 2, "one error is below the threshold")
	p.NoteError(b)
	all, err = p.GetAllInstances()
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "a", all[0].ID)
	now = now.Add(30 * time.Second)
	all, err = p.GetAllInstances()
	require.NoError(t, err)
	assert.Len(t, all, 2, "back after the timeout")

	// Removal reaches the cache.
	require.NoError(t, d.Unregister(ctx, a))
	require.Eventually(t, func() bool { return len(p.Cache().Instances()) == 2 }, 10*time.Second, 5*time.Millisecond)
	i, err := p.GetInstance()
	require.NoError(t, err)
	assert.Equal(t, "b", i.ID)
	select {
	case <-changed:
	default:
		t.Fatal("no CacheChanged event")
	}

	// Filters, random and sticky strategies.
	f, err := discovery.NewProvider(d, "svc", discovery.WithFilter(func(i *discovery.Instance[details]) bool { return i.Port != 2 }))
	require.NoError(t, err)
	require.NoError(t, f.Start(ctx))
	_, err = f.GetInstance()
	assert.ErrorIs(t, err, discovery.ErrNoInstance, "b filtered out, c disabled")
	assert.ErrorContains(t, err, "2 registered (1 disabled, 0 marked down after errors, 1 filtered out)")
	require.NoError(t, d.Register(ctx, a))
	r, err := discovery.NewProvider(d, "svc", discovery.WithStrategy(discovery.Random()))
	require.NoError(t, err)
	s, err := discovery.NewProvider(d, "svc", discovery.WithStrategy(discovery.Sticky(discovery.RoundRobin())))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	require.NoError(t, s.Start(ctx))
	first, err := s.GetInstance()
	require.NoError(t, err)
	for range 5 {
		i, err := r.GetInstance()
		require.NoError(t, err)
		assert.Contains(t, []string{"a", "b"}, i.ID)
		j, err := s.GetInstance()
		require.NoError(t, err)
		assert.Equal(t, first.ID, j.ID, "sticky")
	}
	require.NoError(t, d.Unregister(ctx, first))
	require.Eventually(t, func() bool { return len(s.Cache().Instances()) == 2 }, 10*time.Second, 5*time.Millisecond)
	j, err := s.GetInstance()
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, j.ID, "sticky moves on when its instance is gone")

	require.NoError(t, f.Close())
	require.NoError(t, d.Close()) // closes r, s and p too
	_, err = s.GetInstance()
	assert.ErrorIs(t, err, discovery.ErrClosed)
	testutil.RequireNoChildren(t, connect, "/disc/provider/svc")
}

// The provider's client is cut off: once the client reports the session lost, the
// provider answers ErrStale rather than an instance whose node may be long gone; back
// with a new session, the cache reads the registry again and an instance deleted while
// away is not handed out.
func TestProviderStaleAfterLost(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	od, err := discovery.New[details](other, "/disc/stale")
	require.NoError(t, err)
	defer od.Close()
	gone, stays := newInstance(t, "svc", "gone", 1), newInstance(t, "svc", "stays", 2)
	require.NoError(t, od.Register(ctx, gone))
	require.NoError(t, od.Register(ctx, stays))

	d, err := discovery.New[details](c, "/disc/stale")
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	events := make(chan discovery.CacheEventType, 100)
	p.Cache().AddListener(func(ev discovery.CacheEvent) { events <- ev.Type })
	require.NoError(t, p.Start(ctx))
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	require.Len(t, all, 2)

	proxy.Stall()
	require.NoError(t, od.Unregister(ctx, gone))
	deleted := time.Now()
	waitEvent(t, events, discovery.CacheLost, 30*time.Second)
	t.Logf("provider stale %v after the node was deleted (session timeout 1.5 s)", time.Since(deleted))
	_, err = p.GetInstance()
	assert.ErrorIs(t, err, discovery.ErrStale)
	assert.False(t, p.Cache().Fresh())

	proxy.Heal()
	require.Eventually(t, p.Cache().Fresh, 30*time.Second, 10*time.Millisecond)
	all, err = p.GetAllInstances()
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "stays", all[0].ID)
}

func waitEvent(t *testing.T, ch <-chan discovery.CacheEventType, want discovery.CacheEventType, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case got := <-ch:
			if got == want {
				return
			}
		case <-timer.C:
			t.Fatalf("no %v within %v", want, d)
		}
	}
}
