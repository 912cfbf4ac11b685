package zktest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestTLSServerServesTLS: the secure port completes a TLS handshake with the material's
// client config and the plain port still answers four-letter words.
func TestTLSServerServesTLS(t *testing.T) {
	for _, mutual := range []bool{false, true} {
		var opts []zktest.TLSOption
		if mutual {
			opts = append(opts, zktest.RequireClientCert())
		}
		s, m := zktest.NewTLSServer(t, opts...)
		if s.SecureConnectString() == "" {
			t.Fatal("no secure connect string")
		}
		conn, err := tls.Dial("tcp", s.SecureConnectString(), m.ClientConfig())
		if err != nil {
			t.Fatalf("mutual=%v: TLS dial: %v", mutual, err)
		}
		if st := conn.ConnectionState(); !st.HandshakeComplete || len(st.PeerCertificates) == 0 {
			t.Fatalf("mutual=%v: handshake incomplete: %+v", mutual, st)
		}
		conn.Close()
		if _, err := zktest.FourLetterWord(s.Addr(), "ruok", 5*time.Second); err != nil {
			t.Fatalf("plain port: %v", err)
		}
	}
}

// TestTLSEnsembleSessionSurvivesMemberKill: every member of an ensemble started with
// WithEnsembleTLS serves TLS on its secure port. A client over TLS (session error policy)
// holds a lock; the member it is connected to is killed: the client reconnects over TLS
// to another member with the same session, the lease's Done stays open, the lock node is
// still there and another client cannot take the lock; the release frees it.
func TestTLSEnsembleSessionSurvivesMemberKill(t *testing.T) {
	leakcheck.Check(t)
	m, err := zktest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	e := zktest.NewEnsemble(t, 3, zktest.WithEnsembleTLS(m))
	secure := strings.Split(e.SecureConnectString(), ",")
	if len(secure) != 3 || e.SecureAddr(2) != secure[2] || e.SecureAddr(3) != "" {
		t.Fatalf("secure connect string %q", e.SecureConnectString())
	}
	for i := range 3 {
		conn, err := tls.Dial("tcp", e.SecureAddr(i), m.ClientConfig())
		if err != nil {
			t.Fatalf("member %d: TLS dial: %v", i, err)
		}
		conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The dialer under TLS records the member each connection went to.
	var mu sync.Mutex
	var dialed []string
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err == nil {
			mu.Lock()
			dialed = append(dialed, address)
			mu.Unlock()
		}
		return c, err
	}
	lastDialed := func() (string, int) {
		mu.Lock()
		defer mu.Unlock()
		return dialed[len(dialed)-1], len(dialed)
	}
	c, err := framework.Connect(ctx, e.SecureConnectString(), framework.WithTLS(m.ClientConfig()),
		framework.WithDialer(dialer), framework.WithSessionTimeout(20*time.Second),
		framework.WithConnectionTimeout(2*time.Second), framework.WithErrorPolicy(framework.SessionErrorPolicy))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reconnected := make(chan struct{}, 1)
	remove := c.AddListener(func(s framework.State) {
		if s == framework.Reconnected {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}
	})
	defer remove()
	mx, err := mutex.New(c, "/tls-ensemble/lock")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := mx.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := lease.Node()
	sid := c.SessionID()
	at, dials := lastDialed()
	victim := slices.Index(secure, at)
	if victim < 0 {
		t.Fatalf("connected to %s, not a secure port of %v", at, secure)
	}
	t.Logf("connected to member %d (%s); killing it", victim, at)
	if err := e.Kill(victim); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatalf("no reconnection after member %d was killed (state %v)", victim, c.State())
	}
	if now, n := lastDialed(); n <= dials || now == at {
		t.Fatalf("after the kill the client is connected to %s (dials %d, %d before): not another member", now, n, dials)
	}
	if got := c.SessionID(); got != sid {
		t.Fatalf("session 0x%x after the kill, was 0x%x", got, sid)
	}
	select {
	case <-lease.Done():
		t.Fatal("the lease's Done closed when the member the client was connected to was killed")
	default:
	}
	if st, err := c.Exists(ctx, node); err != nil || st == nil || st.EphemeralOwner != sid {
		t.Fatalf("the lock node %s after the kill: %+v, %v", node, st, err)
	}
	other, err := framework.Connect(ctx, e.SecureConnectString(), framework.WithTLS(m.ClientConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	omx, err := mutex.New(other, "/tls-ensemble/lock")
	if err != nil {
		t.Fatal(err)
	}
	if ol, err := omx.TryAcquire(ctx); !errors.Is(err, mutex.ErrLocked) {
		t.Fatalf("another client's TryAcquire while the first holds the lock: %v, %v (want ErrLocked)", ol, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ol, err := omx.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if err := ol.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := other.Exists(ctx, node); err != nil || st != nil {
		t.Fatalf("the lock node %s after the release: %+v, %v", node, st, err)
	}
}
