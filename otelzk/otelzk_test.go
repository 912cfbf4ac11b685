package otelzk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/otelzk"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// collect reads every metric the reader has, by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func attrsMatch(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.AsString() != v {
			return false
		}
	}
	return true
}

// histCount returns the number of recordings of histogram m with the attributes want.
func histCount(t *testing.T, m metricdata.Metrics, want map[string]string) uint64 {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T", m.Name, m.Data)
	var n uint64
	for _, dp := range h.DataPoints {
		if attrsMatch(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

// sum returns the value of counter or gauge m with the attributes want.
func sum(t *testing.T, m metricdata.Metrics, want map[string]string) int64 {
	t.Helper()
	var dps []metricdata.DataPoint[int64]
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		dps = d.DataPoints
	case metricdata.Gauge[int64]:
		dps = d.DataPoints
	default:
		t.Fatalf("%s is a %T", m.Name, m.Data)
	}
	var n int64
	for _, dp := range dps {
		if attrsMatch(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// TestMetricsAgainstARealServer runs requests, a lost connection, a mutex and a
// semaphore on a client fed to otelzk, and reads the metrics with the SDK's manual
// reader.
func TestMetricsAgainstARealServer(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otelzk.New(mp)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })

	states := make(chan framework.State, 16)
	opts := append(m.Options(), framework.WithStateListener(func(s framework.State) { states <- s }))
	c := testutil.Connect(t, proxy.ConnectString(), opts...)
	waitState := func(want framework.State) {
		t.Helper()
		for {
			select {
			case s := <-states:
				if s == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("state %v never came", want)
			}
		}
	}
	waitState(framework.Connected)

	got := collect(t, reader)
	assert.Equal(t, int64(1), sum(t, got["zookeeper.client.session.state"], map[string]string{"zookeeper.state": "CONNECTED"}))
	assert.Equal(t, int64(0), sum(t, got["zookeeper.client.session.state"], map[string]string{"zookeeper.state": "SUSPENDED"}))

	// Requests: a create, a read of a missing node (an error by code).
	_, err = c.Create(ctx, "/otel/a", []byte("x"), framework.WithParents())
	require.NoError(t, err)
	_, _, err = c.GetData(ctx, "/otel/missing")
	require.ErrorIs(t, err, framework.ErrNoNode)

	// A lock held by another client: our TryAcquire fails; then we take it.
	other := testutil.Connect(t, srv.ConnectString())
	mu, err := mutex.New(c, "/otel/lock")
	require.NoError(t, err)
	busy, err := mutex.New(other, "/otel/lock")
	require.NoError(t, err)
	held, err := busy.Acquire(ctx)
	require.NoError(t, err)
	_, err = mu.TryAcquire(ctx)
	require.ErrorIs(t, err, mutex.ErrLocked)
	require.NoError(t, held.Release(ctx))
	l, err := mu.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	sem, err := semaphore.New(c, "/otel/sem", 2)
	require.NoError(t, err)
	sl, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, sl.Release(ctx))

	// A dropped connection: Suspended, then Reconnected.
	proxy.DropConnections()
	waitState(framework.Suspended)
	waitState(framework.Reconnected)

	got = collect(t, reader)
	dur := got["zookeeper.client.request.duration"]
	assert.GreaterOrEqual(t, histCount(t, dur, map[string]string{"zookeeper.operation": "create", "zookeeper.status": "OK"}), uint64(1))
	assert.Equal(t, uint64(1), histCount(t, dur, map[string]string{"zookeeper.operation": "getData", "zookeeper.status": "NONODE"}))
	errs := got["zookeeper.client.request.errors"]
	assert.Equal(t, int64(1), sum(t, errs, map[string]string{"zookeeper.operation": "getData", "zookeeper.status": "NONODE"}))
	assert.Equal(t, int64(0), sum(t, errs, map[string]string{"zookeeper.status": "OK"}), "successes are not errors")

	wait := got["zookeeper.lock.wait.duration"]
	assert.Equal(t, uint64(1), histCount(t, wait, map[string]string{"zookeeper.recipe": "mutex", "zookeeper.lock.outcome": "failed"}))
	assert.Equal(t, uint64(1), histCount(t, wait, map[string]string{"zookeeper.recipe": "mutex", "zookeeper.lock.outcome": "acquired"}))
	assert.Equal(t, uint64(1), histCount(t, wait, map[string]string{"zookeeper.recipe": "semaphore", "zookeeper.lock.outcome": "acquired"}))
	hold := got["zookeeper.lock.hold.duration"]
	assert.Equal(t, uint64(1), histCount(t, hold, map[string]string{"zookeeper.recipe": "mutex"}))
	assert.Equal(t, uint64(1), histCount(t, hold, map[string]string{"zookeeper.recipe": "semaphore"}))

	changes := got["zookeeper.client.session.state_changes"]
	assert.Equal(t, int64(1), sum(t, changes, map[string]string{"zookeeper.state": "CONNECTED"}))
	assert.Equal(t, int64(1), sum(t, changes, map[string]string{"zookeeper.state": "SUSPENDED"}))
	assert.Equal(t, int64(1), sum(t, changes, map[string]string{"zookeeper.state": "RECONNECTED"}))
	// The gauge follows the state listener, which heard RECONNECTED before ours did (the
	// listeners given as options are called in order).
	gauge := got["zookeeper.client.session.state"]
	assert.Equal(t, int64(1), sum(t, gauge, map[string]string{"zookeeper.state": "RECONNECTED"}))
	assert.Equal(t, int64(0), sum(t, gauge, map[string]string{"zookeeper.state": "CONNECTED"}))
	assert.Equal(t, int64(1), sum(t, gauge, nil), "exactly one state is current")

	_, err = otelzk.New(nil)
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
}
