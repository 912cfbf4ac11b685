package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// WithTLS makes the client speak TLS to every server (ZooKeeper's secureClientPort).
// The server's certificate is checked against config.RootCAs (the system's roots when
// nil) for the host the connect string names, unless config.ServerName is set; a client
// certificate for mutual TLS goes in config.Certificates (or GetClientCertificate). The
// config is cloned: changing it afterwards changes nothing.
//
// TLS runs over the configured dialer (WithDialer: a proxy, a test's fault injector),
// and the TLS handshake counts towards the connection's handshake bound (see
// WithConnectionTimeout): a server that does not finish it in time, a certificate that
// does not verify, or a server that does not speak TLS fails the attempt with an error
// that says so, and Connect's error (ConnectError.Dial) carries it.
//
// With TLS the client dials the servers by the names in the connect string (the dialer
// resolves them), not by addresses resolved once at the start, so that each server's
// name is the one its certificate is checked for.
func WithTLS(config *tls.Config) Option {
	return check(func(o *options) error {
		if config == nil {
			return fmt.Errorf("framework: %w: nil TLS config", ErrInvalidArgument)
		}
		o.tls = config.Clone()
		return nil
	})
}

// tlsHandshake runs the TLS handshake on conn, dialed to address, by deadline. It closes
// conn when the handshake fails.
func (c *Client) tlsHandshake(conn net.Conn, address string, deadline time.Time) (net.Conn, error) {
	cfg := c.opts.tls.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			host = address
		}
		cfg.ServerName = host
	}
	tc := tls.Client(conn, cfg)
	_ = conn.SetDeadline(deadline)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) { // conn's deadline is ctx's
			return nil, fmt.Errorf("framework: TLS handshake with %s: not done within %v (a server that does not speak TLS on this port?): %w",
				address, c.handshakeTimeout(), err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("framework: TLS handshake with %s: the server hung up (not a secure client port?): %w", address, err)
		}
		return nil, fmt.Errorf("framework: TLS handshake with %s: %w", address, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return tc, nil
}

// namedHosts is the host provider of a TLS client: go-zookeeper's default resolves the
// connect string's names to addresses once, and the dialer would see only addresses; this
// one hands out the servers as the connect string names them, in a random order, as
// go-zookeeper's does.
type namedHosts struct {
	mu      sync.Mutex
	servers []string
	curr    int
	last    int
}

func (h *namedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(servers) == 0 {
		return fmt.Errorf("framework: %w: no servers", ErrInvalidArgument)
	}
	h.servers = append([]string(nil), servers...)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *namedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
