package discovery_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// decodeJava decodes the base64 instance JSONs the Java driver answers with.
func decodeJava[T any](t *testing.T, answer string) []*discovery.Instance[T] {
	t.Helper()
	var out []*discovery.Instance[T]
	for _, f := range strings.Fields(answer) {
		b, err := base64.StdEncoding.DecodeString(f)
		require.NoError(t, err)
		inst, err := discovery.Unmarshal[T](b)
		require.NoError(t, err, "%s", b)
		out = append(out, inst)
	}
	return out
}

// A Java service and a Go service register under one base path, and each finds the
// other through its own provider, with every field equal; the node Java wrote is
// byte for byte what Go writes for the same instance.
func TestInteropBothWays(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	ctx := testutil.Context(t, 120*time.Second)
	java := curatortest.Start(t, connect)
	c := testutil.Connect(t, connect)
	const base = "/disc/interop"

	_, err := java.Do(ctx, "disc.new jd %s details", base)
	require.NoError(t, err)
	ans, err := java.Do(ctx, "disc.register jd orders 10.1.2.3 8080 8443 DYNAMIC {scheme}://{address}:{port}/api java-orders zone=eu")
	require.NoError(t, err)
	fromJava := decodeJava[details](t, ans)[0]

	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	goInst := newInstance(t, "orders", "go-orders-1", 9090, discovery.WithSSLPort(9443))
	require.NoError(t, d.Register(ctx, goInst))

	// Go finds Java's instance, every field equal.
	got, err := d.QueryForInstance(ctx, "orders", fromJava.ID)
	require.NoError(t, err)
	assert.Equal(t, fromJava, got)
	assert.Equal(t, details{Description: "java-orders", Metadata: map[string]string{"zone": "eu"}}, got.Payload)
	assert.Equal(t, "https://10.1.2.3:8080/api", got.BuildURI(nil), "the scheme is https when there is an SSL port, as in Curator")
	raw, _, err := c.GetData(ctx, base+"/orders/"+fromJava.ID)
	require.NoError(t, err)
	mine, err := got.Marshal()
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(mine), "Go writes the bytes Curator writes (a payload map of one key: Go orders map keys, Java keeps insertion order)")

	// Java finds Go's instance, every field equal, by query and by its provider.
	ans, err = java.Do(ctx, "disc.instance jd orders %s", goInst.ID)
	require.NoError(t, err)
	require.NotEmpty(t, ans)
	assert.Equal(t, goInst, decodeJava[details](t, ans)[0])
	ans, err = java.Do(ctx, "disc.instances jd orders")
	require.NoError(t, err)
	both := decodeJava[details](t, ans)
	require.Len(t, both, 2)

	_, err = java.Do(ctx, "disc.provider.new jp jd orders")
	require.NoError(t, err)
	ans, err = java.Do(ctx, "disc.provider.all jp")
	require.NoError(t, err)
	assert.ElementsMatch(t, []*discovery.Instance[details]{fromJava, goInst}, decodeJava[details](t, ans))
	seen := map[string]bool{}
	for range 2 {
		ans, err = java.Do(ctx, "disc.provider.get jp")
		require.NoError(t, err)
		seen[decodeJava[details](t, ans)[0].ID] = true
	}
	assert.Equal(t, map[string]bool{fromJava.ID: true, goInst.ID: true}, seen, "Java's round robin hands out both")

	// Go's provider finds both too.
	p, err := discovery.NewProvider(d, "orders")
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	assert.ElementsMatch(t, []*discovery.Instance[details]{fromJava, goInst}, all)

	// A Java ServiceCache sees a Go instance come and go.
	_, err = java.Do(ctx, "disc.cache.new jc jd orders")
	require.NoError(t, err)
	late := newInstance(t, "orders", "go-orders-2", 9091)
	require.NoError(t, d.Register(ctx, late))
	ids := []string{fromJava.ID, goInst.ID, late.ID}
	waitCacheEvent(t, java, "jc", ids)
	require.NoError(t, d.Unregister(ctx, late))
	waitCacheEvent(t, java, "jc", ids[:2])

	// Java's unregister reaches Go's provider.
	_, err = java.Do(ctx, "disc.unregister jd %s", fromJava.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		all, err := p.GetAllInstances()
		return err == nil && len(all) == 1 && all[0].ID == goInst.ID
	}, 10*time.Second, 10*time.Millisecond)
	for _, id := range []string{"jc", "jp", "jd"} {
		_, err = java.Do(ctx, "disc.close %s", id)
		require.NoError(t, err)
	}
	require.NoError(t, d.Close())
	testutil.RequireNoChildren(t, connect, base+"/orders")
}

// waitCacheEvent waits for the Java cache's event listing exactly ids.
func waitCacheEvent(t *testing.T, java *curatortest.Tool, cid string, ids []string) {
	t.Helper()
	sorted := append([]string(nil), ids...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if sorted[j] < sorted[i] {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	want := "disccache " + cid + " " + strings.Join(sorted, ",")
	ctx := testutil.Context(t, 20*time.Second)
	for {
		ev, err := java.WaitEvent(ctx, "disccache "+cid+" ")
		require.NoError(t, err, "waiting for %q", want)
		if ev == want {
			return
		}
	}
}

// Map payloads, which Java writes with a class name ("@class": "java.util.LinkedHashMap")
// and reads without one.
func TestInteropMapPayload(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	ctx := testutil.Context(t, 120*time.Second)
	java := curatortest.Start(t, connect)
	c := testutil.Connect(t, connect)
	const base = "/disc/interop-map"
	_, err := java.Do(ctx, "disc.new jd %s map", base)
	require.NoError(t, err)
	ans, err := java.Do(ctx, "disc.register jd svc 10.0.0.9 80 - STATIC - hello a=1")
	require.NoError(t, err)
	fromJava := decodeJava[map[string]string](t, ans)[0]
	assert.Equal(t, map[string]string{"description": "hello", "a": "1"}, fromJava.Payload)
	assert.Equal(t, discovery.Static, fromJava.ServiceType)

	d, err := discovery.New[map[string]string](c, base)
	require.NoError(t, err)
	defer d.Close()
	got, err := d.QueryForInstance(ctx, "svc", fromJava.ID)
	require.NoError(t, err)
	assert.Equal(t, fromJava, got)

	goInst, err := discovery.NewInstance("svc", map[string]string{"from": "go"}, discovery.WithPort(81))
	require.NoError(t, err)
	require.NoError(t, d.Register(ctx, goInst))
	ans, err = java.Do(ctx, "disc.instance jd svc %s", goInst.ID)
	require.NoError(t, err)
	assert.Equal(t, goInst, decodeJava[map[string]string](t, ans)[0])

	_, err = java.Do(ctx, "disc.unregister jd %s", fromJava.ID)
	require.NoError(t, err)
	_, err = java.Do(ctx, "disc.close jd")
	require.NoError(t, err)
	require.NoError(t, d.Close())
	testutil.RequireNoChildren(t, connect, base+"/svc")
}
