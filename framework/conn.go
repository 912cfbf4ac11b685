package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework/internal/wire"
)

// connEnv names the environment variable that chooses the connection under a client
// while both exist: "wire" for our own (framework/internal/wire), anything else
// go-zookeeper's Conn, the default.
const connEnv = "ZOOCURATOR_CONN"

// zkConn is what the client asks of the connection that carries its session: the calls
// of go-zookeeper's Conn it makes, which *zk.Conn has and wireConn gives over our own.
type zkConn interface {
	SessionID() int64
	Server() string
	Close()
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, watchSet, error)
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, watchSet, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, watchSet, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error)
	Delete(path string, version int32) error
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Sync(path string) (string, error)
	GetACL(path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
	AddAuth(scheme string, auth []byte) error
}

// connBox holds the client's connection for an atomic.Pointer.
type connBox struct{ zkConn }

// loadConn returns the client's connection, nil before Start.
func (c *Client) loadConn() zkConn {
	if b := c.conn.Load(); b != nil {
		return b.zkConn
	}
	return nil
}

// gozk is go-zookeeper's Conn, whose reads with a watch give the registry their
// watch's channel.
type gozk struct{ *zk.Conn }

func (g gozk) GetW(path string) ([]byte, *zk.Stat, watchSet, error) {
	d, st, ech, err := g.Conn.GetW(path)
	return d, st, watchSet{ch: ech}, err
}

func (g gozk) ExistsW(path string) (bool, *zk.Stat, watchSet, error) {
	ok, st, ech, err := g.Conn.ExistsW(path)
	return ok, st, watchSet{ch: ech}, err
}

func (g gozk) ChildrenW(path string) ([]string, *zk.Stat, watchSet, error) {
	kids, st, ech, err := g.Conn.ChildrenW(path)
	return kids, st, watchSet{ch: ech}, err
}

// wireConn is our own connection (a wire.Client: one session at a time, resumed across
// servers, a new one after an expiry) behind the calls the client makes. Its requests
// run on the client's request goroutines (see callAt) and end only when it is closed,
// so that a late outcome is still seen, as with go-zookeeper.
type wireConn struct {
	cl     *wire.Client
	ctx    context.Context
	cancel context.CancelFunc
}

// dialWire starts our own connection; its notices are tagged, as dial's events.
func (c *Client) dialWire() (zkConn, error) {
	seq := c.connSeq.Add(1)
	hosts, servers := c.newHostList()
	if err := hosts.Init(servers); err != nil {
		return nil, fmt.Errorf("framework: connect %v: %w", servers, err)
	}
	wl, err := wire.NewHostList(hosts.list())
	if err != nil {
		return nil, fmt.Errorf("framework: connect %v: %w", servers, err)
	}
	hosts.wire = wl
	w := &wireConn{}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	auth := make([]wire.Auth, 0, len(c.opts.auth))
	for _, a := range c.opts.auth {
		auth = append(auth, wire.Auth{Scheme: a.scheme, Auth: a.auth})
	}
	cl, err := wire.NewClient(wire.ClientConfig{
		Hosts:          wl,
		Dialer:         c.wireDialer(),
		SessionTimeout: c.opts.sessionTimeout,
		Auth:           auth,
		OnEvent:        func(n wire.Notice) { c.onNotice(seq, w, n) },
		OnDialFailed:   c.handshakeFailed,
		// A request made while there is no connection fails unsent once no server
		// answered a round of dials, as with go-zookeeper (ErrNoServer): the retry
		// policy decides about another attempt, after waitConnected.
		FailUnsentEachRound: true,
	})
	if err != nil {
		w.cancel()
		return nil, fmt.Errorf("framework: connect %v: %w", servers, err)
	}
	w.cl = cl
	c.useHostList(hosts, servers)
	return w, nil
}

// wireDialer opens each connection of our own client: the configured dialer, then TLS
// when configured, within the attempt's bound and handshakeTimeout.
func (c *Client) wireDialer() wire.Dialer {
	dial := c.recordDials(zk.Dialer(c.opts.dialer))
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		deadline := time.Now().Add(c.handshakeTimeout())
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		conn, err := dial(network, address, time.Until(deadline))
		if err != nil {
			return nil, err
		}
		if c.opts.tls != nil {
			if conn, err = c.tlsHandshake(conn, address, deadline); err != nil {
				c.dialErr.Store(dialFailure{err})
				return nil, err
			}
		}
		return conn, nil
	}
}

// handshakeFailed notes a failed handshake for Connect's error, as handshakeConn does
// for go-zookeeper (a failed dial the dialer noted itself).
func (c *Client) handshakeFailed(server string, err error) {
	var he *wire.HandshakeError
	if !errors.As(err, &he) {
		return
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("framework: %s: no reply to the connect request within %v: %w", server, c.handshakeTimeout(), err)
	} else {
		hint := ""
		if c.opts.tls == nil && errors.Is(err, io.EOF) {
			hint = " (a secure client port? it needs WithTLS)"
		}
		err = fmt.Errorf("framework: %s: connection lost before the reply to the connect request%s: %w", server, hint, err)
	}
	c.dialErr.Store(dialFailure{err})
}

// onNotice takes a notice of our own client: a watch event goes to the registry (with
// the watches it ended), a change of state to the state machine.
func (c *Client) onNotice(seq uint64, w *wireConn, n wire.Notice) {
	ev := zk.Event{Type: n.Type, State: n.State, Path: n.Path, Err: n.Err, Server: n.Server}
	if n.Type != zk.EventSession {
		c.watches.notifyEnded(w, ev, n.Seq, endedKinds(n.Ended))
		return
	}
	if n.State == zk.StateHasSession {
		c.setNegotiated(n.Timeout)
		c.dialErr.Store(dialFailure{})
	}
	c.onEvent(seq, w, n.Session, ev)
}

// endedKinds are the registry's kinds of watch that the ended one-shot watches of a
// notice stand for: an exists watch on a node that was there is a data watch.
func endedKinds(k wire.WatchKinds) (kinds [numWatchKinds]bool) {
	kinds[watchData] = k&wire.WatchData != 0
	kinds[watchExists] = k&(wire.WatchData|wire.WatchExist) != 0
	kinds[watchChildren] = k&wire.WatchChild != 0
	return kinds
}

func (w *wireConn) SessionID() int64 { return w.cl.Session().ID }

func (w *wireConn) Server() string { return w.cl.Server() }

func (w *wireConn) Close() {
	_ = w.cl.Close()
	w.cancel()
}

func orEmpty(st *zk.Stat) *zk.Stat {
	if st == nil {
		return &zk.Stat{}
	}
	return st
}

func (w *wireConn) Get(path string) ([]byte, *zk.Stat, error) {
	r, err := w.cl.GetData(w.ctx, path, false)
	return r.Data, orEmpty(r.Stat), err
}

func (w *wireConn) GetW(path string) ([]byte, *zk.Stat, watchSet, error) {
	r, err := w.cl.GetData(w.ctx, path, true)
	return r.Data, orEmpty(r.Stat), watchSet{seq: r.Seq}, err
}

// exists answers as go-zookeeper does: a missing node is false, not an error.
func (w *wireConn) exists(path string, watch bool) (bool, *zk.Stat, uint64, error) {
	r, err := w.cl.Exists(w.ctx, path, watch)
	if errors.Is(err, zk.ErrNoNode) {
		return false, &zk.Stat{}, r.Seq, nil // with watch, an exist watch was set
	}
	return err == nil, orEmpty(r.Stat), r.Seq, err
}

func (w *wireConn) Exists(path string) (bool, *zk.Stat, error) {
	ok, st, _, err := w.exists(path, false)
	return ok, st, err
}

func (w *wireConn) ExistsW(path string) (bool, *zk.Stat, watchSet, error) {
	ok, st, seq, err := w.exists(path, true)
	return ok, st, watchSet{seq: seq}, err
}

func (w *wireConn) Children(path string) ([]string, *zk.Stat, error) {
	r, err := w.cl.GetChildren(w.ctx, path, false)
	return r.Children, orEmpty(r.Stat), err
}

func (w *wireConn) ChildrenW(path string) ([]string, *zk.Stat, watchSet, error) {
	r, err := w.cl.GetChildren(w.ctx, path, true)
	return r.Children, orEmpty(r.Stat), watchSet{seq: r.Seq}, err
}

func (w *wireConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	r, err := w.cl.Create(w.ctx, path, data, acl, wire.CreateMode(flags), 0)
	return r.Path, err
}

func (w *wireConn) CreateContainer(path string, data []byte, _ int32, acl []zk.ACL) (string, error) {
	r, err := w.cl.Create(w.ctx, path, data, acl, wire.ModeContainer, 0)
	return r.Path, err
}

func (w *wireConn) CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	r, err := w.cl.Create(w.ctx, path, data, acl, wire.CreateMode(flags), ttl)
	return r.Path, err
}

func (w *wireConn) Delete(path string, version int32) error {
	_, err := w.cl.Delete(w.ctx, path, version)
	return err
}

func (w *wireConn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	r, err := w.cl.SetData(w.ctx, path, data, version)
	return orEmpty(r.Stat), err
}

func (w *wireConn) Sync(path string) (string, error) {
	_, err := w.cl.Sync(w.ctx, path)
	return path, err
}

func (w *wireConn) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	r, err := w.cl.GetACL(w.ctx, path)
	return r.ACL, orEmpty(r.Stat), err
}

func (w *wireConn) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	r, err := w.cl.SetACL(w.ctx, path, acl, version)
	return orEmpty(r.Stat), err
}

// Multi takes go-zookeeper's request records and answers with its response records:
// the operations that did not fail themselves in a failed transaction carry
// wire.ErrRolledBack (see isRolledBackCode).
func (w *wireConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	wops := make([]wire.WriteOp, len(ops))
	for i, op := range ops {
		switch op := op.(type) {
		case *zk.CreateRequest:
			wops[i] = wire.CreateOp{Path: op.Path, Data: op.Data, ACL: op.Acl, Mode: wire.CreateMode(op.Flags)}
		case *zk.DeleteRequest:
			wops[i] = wire.DeleteOp{Path: op.Path, Version: op.Version}
		case *zk.SetDataRequest:
			wops[i] = wire.SetDataOp{Path: op.Path, Data: op.Data, Version: op.Version}
		case *zk.CheckVersionRequest:
			wops[i] = wire.CheckOp{Path: op.Path, Version: op.Version}
		default:
			return nil, fmt.Errorf("framework: unknown operation type %T", op)
		}
	}
	r, err := w.cl.Multi(w.ctx, wops...)
	if len(r.Results) == 0 {
		return nil, err
	}
	resp := make([]zk.MultiResponse, len(r.Results))
	for i, res := range r.Results {
		resp[i] = zk.MultiResponse{Stat: res.Stat, String: res.Path, Error: res.Err}
	}
	return resp, err
}

// AddAuth is not used with our own connection: it sends the credentials itself on every
// connection (wire.ClientConfig.Auth).
func (w *wireConn) AddAuth(string, []byte) error {
	return errors.New("framework: AddAuth on our own connection: its credentials are in its configuration")
}
