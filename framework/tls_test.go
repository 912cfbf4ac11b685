package framework_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// tlsConnect connects to connect with WithTLS(cfg) and the given options, failing the
// test on an error.
func tlsConnect(t *testing.T, connect string, cfg *tls.Config, opts ...framework.Option) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Connect(ctx, connect, append([]framework.Option{framework.WithTLS(cfg)}, opts...)...)
	if err != nil {
		t.Fatalf("connect over TLS: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTLSWatchFiresAndSessionSurvivesDrop: a client speaks TLS to a secure port through
// the user's dialer (a raw proxy's, so TLS runs over WithDialer): a watch set over TLS
// fires, and after the proxy drops the connection the client reconnects (a new TLS
// handshake) with the same session, and its watch set before the drop fires.
func TestTLSWatchFiresAndSessionSurvivesDrop(t *testing.T) {
	srv, m := zktest.NewTLSServer(t)
	proxy := zktest.NewRawProxy(t, srv.SecureConnectString())
	cfg := &tls.Config{RootCAs: m.CAPool}
	c := tlsConnect(t, srv.SecureConnectString(), cfg, framework.WithDialer(proxy.Dialer()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if _, err := c.Create(ctx, "/tlsw", []byte("a")); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := c.GetDataW(ctx, "/tlsw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetData(ctx, "/tlsw", []byte("b"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	case <-ctx.Done():
		t.Fatal("the watch set over TLS did not fire")
	}

	_, _, w2, err := c.GetDataW(ctx, "/tlsw")
	if err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	states := recordStates(c)
	accepted := proxy.Accepted()
	proxy.DropConnections()
	states.waitFor(t, 30*time.Second, framework.Suspended, framework.Reconnected)
	if got := c.SessionID(); got != sid {
		t.Fatalf("session %x after the drop, was %x", got, sid)
	}
	if proxy.Accepted() <= accepted {
		t.Fatal("the client did not make a new connection")
	}
	other := tlsConnect(t, srv.SecureConnectString(), cfg)
	if _, err := other.SetData(ctx, "/tlsw", []byte("c"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w2.Done():
	case <-ctx.Done():
		t.Fatal("the watch set before the drop did not fire after the TLS reconnection")
	}
	if err := c.Delete(ctx, "/tlsw"); err != nil {
		t.Fatal(err)
	}
}

// TestTLSMutual: a server that requires client certificates serves a client that
// presents one signed by its CA.
func TestTLSMutual(t *testing.T) {
	srv, m := zktest.NewTLSServer(t, zktest.RequireClientCert())
	c := tlsConnect(t, srv.SecureConnectString(), m.ClientConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, "/tlsm", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/tlsm"); err != nil {
		t.Fatal(err)
	}
}

// TestTLSServerNameFromConnectString: the certificate is checked for the connect
// string's host name (localhost, a DNS name of the server's certificate), not for the
// address it resolves to; a ServerName in the config wins.
func TestTLSServerNameFromConnectString(t *testing.T) {
	srv, m := zktest.NewTLSServer(t)
	_, port, _ := net.SplitHostPort(srv.SecureConnectString())
	var names []string
	cfg := &tls.Config{RootCAs: m.CAPool, VerifyConnection: func(cs tls.ConnectionState) error {
		names = append(names, cs.ServerName)
		return nil
	}}
	c := tlsConnect(t, "localhost:"+port, cfg)
	c.Close()
	if len(names) == 0 || names[0] != "localhost" {
		t.Fatalf("server names checked: %q, want localhost", names)
	}
}

// connectFails connects with opts and wants an error within bound whose message holds
// every one of want.
func connectFails(t *testing.T, connect string, bound time.Duration, want []string, opts ...framework.Option) {
	t.Helper()
	start := time.Now()
	c, err := framework.Connect(context.Background(), connect,
		append([]framework.Option{framework.WithConnectionTimeout(2 * time.Second)}, opts...)...)
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("connected")
	}
	if took > bound {
		t.Fatalf("the failure took %v (more than %v): %v", took, bound, err)
	}
	if !errors.Is(err, framework.ErrNotConnected) {
		t.Fatalf("error %v does not match ErrNotConnected", err)
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}

// TestTLSErrors: a certificate another CA signed, a wrong server name, a TLS client on
// the plain port, a port that accepts and never answers, a plaintext client on the secure
// port, and, where a client certificate is required, none or one another CA signed: each
// fails within the connection timeout, with an error that says what failed.
func TestTLSErrors(t *testing.T) {
	srv, m := zktest.NewTLSServer(t)
	other, err := zktest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	bound := 10 * time.Second // the 2 s connection timeout, and slack for a loaded machine
	t.Run("UnknownCA", func(t *testing.T) {
		connectFails(t, srv.SecureConnectString(), bound,
			[]string{"TLS handshake with " + srv.SecureConnectString(), "certificate signed by unknown authority"},
			framework.WithTLS(&tls.Config{RootCAs: other.CAPool}))
	})
	t.Run("WrongServerName", func(t *testing.T) {
		connectFails(t, srv.SecureConnectString(), bound,
			[]string{"TLS handshake with", "zk.example.com"},
			framework.WithTLS(&tls.Config{RootCAs: m.CAPool, ServerName: "zk.example.com"}))
	})
	t.Run("TLSClientOnPlainPort", func(t *testing.T) {
		connectFails(t, srv.ConnectString(), bound, []string{"TLS handshake with " + srv.ConnectString(), "not a secure client port?"},
			framework.WithTLS(&tls.Config{RootCAs: m.CAPool}))
	})
	t.Run("PlaintextClientOnSecurePort", func(t *testing.T) {
		connectFails(t, srv.SecureConnectString(), bound,
			[]string{srv.SecureConnectString() + ": connection lost before the reply to the connect request", "it needs WithTLS"})
	})
	t.Run("SilentPort", func(t *testing.T) {
		// A port that accepts and never answers (a hung server, a firewall that holds the
		// connection): the handshake's bound ends the attempt.
		addr := silentPort(t)
		connectFails(t, addr, bound,
			[]string{"TLS handshake with " + addr, "not done within", "a server that does not speak TLS on this port?"},
			framework.WithTLS(&tls.Config{RootCAs: m.CAPool}))
	})
	t.Run("ConnectionDeadline", func(t *testing.T) {
		// The connection's deadline, not the handshake's context, ends the handshake (they
		// are the same instant: either may come first): the error says the same.
		addr := silentPort(t)
		dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
			c, err := net.DialTimeout(network, address, timeout)
			if err != nil {
				return nil, err
			}
			return deadlineConn{c}, nil
		}
		connectFails(t, addr, bound,
			[]string{"TLS handshake with " + addr, "not done within", "a server that does not speak TLS on this port?"},
			framework.WithTLS(&tls.Config{RootCAs: m.CAPool}), framework.WithDialer(dialer))
	})
	t.Run("Mutual", func(t *testing.T) {
		msrv, _ := zktest.NewTLSServer(t, zktest.RequireClientCert(), zktest.WithTLSMaterial(m))
		t.Run("NoClientCertificate", func(t *testing.T) {
			connectFails(t, msrv.SecureConnectString(), bound, []string{"TLS handshake with " + msrv.SecureConnectString(), "bad certificate"},
				framework.WithTLS(&tls.Config{RootCAs: m.CAPool}))
		})
		t.Run("ClientCertificateOfUnknownCA", func(t *testing.T) {
			connectFails(t, msrv.SecureConnectString(), bound, []string{"TLS handshake with " + msrv.SecureConnectString(), "remote error: tls: unknown certificate"},
				framework.WithTLS(&tls.Config{RootCAs: m.CAPool, Certificates: []tls.Certificate{other.ClientCert}}))
		})
	})
	t.Run("NilConfig", func(t *testing.T) {
		if _, err := framework.New(srv.SecureConnectString(), framework.WithTLS(nil)); !errors.Is(err, framework.ErrInvalidArgument) {
			t.Fatalf("WithTLS(nil): %v", err)
		}
	})
}

// silentPort returns the address of a port that accepts connections and never sends a
// byte, closed at the test's end.
func silentPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

// deadlineConn is a connection whose reads fail as when its deadline has passed.
type deadlineConn struct{ net.Conn }

func (c deadlineConn) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
}
