package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
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
// name is the one its certificate is checked for. TLS turns ensemble tracking off unless
// it is asked for (see WithEnsembleTracking).
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
