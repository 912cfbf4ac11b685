package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// StateClosed is the state a Client reports last, once Close ended it (the Java
// client's KeeperState.Closed; go-zookeeper names none).
const StateClosed zk.State = 7

// spinDelay is the pause after a round of dials that reached no server (the Java
// client's): a client cut off from every server tries each once a second, not in a loop.
const spinDelay = time.Second

// maxCloseWait bounds how long Close waits for the server to confirm closeSession.
const maxCloseWait = 2 * time.Second

// ErrSessionGivenUp is the cause of the expiry a Client reports after GiveUp. It wraps
// ErrSessionExpired.
var ErrSessionGivenUp error = &wrapped{"wire: session given up by the client", ErrSessionExpired}

// ErrNotSent is the error of a request that waited for a connection while a whole round
// of dials reached no server (ClientConfig.FailUnsentEachRound): it was never sent. It
// wraps zk.ErrNoServer.
var ErrNotSent error = &wrapped{"wire: not sent: no server reached", zk.ErrNoServer}

// ErrSessionTimedOut is the cause of the expiry a Client reports when no server
// answered for the whole session timeout. It wraps ErrSessionExpired.
var ErrSessionTimedOut error = &wrapped{"wire: no server answered for the session timeout", ErrSessionExpired}

// Notice is what a Client tells its OnEvent: a change of state (Type is zk.EventSession)
// or a watch event.
type Notice struct {
	// Type is zk.EventSession for a change of state; for a watch, what happened
	// (zk.EventNodeCreated, ..., EventDataWatchRemoved after RemoveWatches, or
	// zk.EventNotWatching for a watch the end of its session ended).
	Type zk.EventType
	// State is the new state for a change of state: zk.StateConnecting (looking for a
	// server for a new session), zk.StateHasSession (connected, the session usable),
	// zk.StateDisconnected (the connection ended; the session may live), zk.StateExpired
	// (the session ended), zk.StateAuthFailed (a credential was refused: the Client has
	// ended) or StateClosed. For a watch event it is the server's (zk.StateSyncConnected),
	// or zk.StateExpired for EventNotWatching.
	State zk.State
	// Path is the node's path of a watch event, without the chroot.
	Path string
	// Session is the id of the session the notice is about (0 for StateConnecting).
	Session int64
	// Ended are the one-shot watches on Path the event ended.
	Ended WatchKinds
	// NewSession, for zk.StateHasSession, says that the session is not the one the
	// Client had before (the first, or one opened after an expiry).
	NewSession bool
	// Server is the server (as the HostList gave it) of a zk.StateHasSession, and of the
	// connection a zk.StateDisconnected ended.
	Server string
	// Timeout is the session timeout the server negotiated, for zk.StateHasSession.
	Timeout time.Duration
	// Seq, for a watch event, is its place in the order of the Client's watch events and
	// of the replies of its reads with a watch (their Seq): an event ends only watches
	// set by replies of a lower Seq.
	Seq uint64
	// Err is why, for zk.StateDisconnected (the connection's error), zk.StateExpired
	// (ErrSessionExpired from the server, ErrSessionTimedOut, ErrSessionGivenUp) and
	// zk.StateAuthFailed; for EventNotWatching, the session's expiry.
	Err error
}

// ClientConfig is what NewClient needs.
type ClientConfig struct {
	// Hosts are the servers to dial. Required.
	Hosts *HostList
	// Dialer opens each connection (TLS is its business). The default is a net.Dialer.
	Dialer Dialer
	// SessionTimeout is the timeout requested for each new session (the default 10 s).
	SessionTimeout time.Duration
	// Chroot, if not empty, prefixes every path (see Config.Chroot).
	Chroot string
	// SASL, when not nil, authenticates every connection with SASL DIGEST-MD5 before
	// any other packet (see Config.SASL). A refusal ends the Client, as a refused Auth
	// does.
	SASL *SASLDigest
	// Auth are sent on every connection, before any request.
	Auth []Auth
	// OnEvent receives the notices, one at a time, in order, on a goroutine of the
	// Client (see Client). The default drops them.
	OnEvent func(Notice)
	// MaxFrame is the largest frame read or written (the default DefaultMaxFrame).
	MaxFrame int
	// FailUnsentEachRound, when true, fails the requests waiting for a connection with
	// ErrNotSent (they were never sent) whenever a whole round of dials reached no
	// server, as go-zookeeper fails its queued requests with zk.ErrNoServer; otherwise
	// they wait for the session's next connection, within their ctx.
	FailUnsentEachRound bool
	// OnDialFailed, when not nil, is told of each connection attempt that failed, with
	// its server and Dial's error (a *HandshakeError when the Dialer's connection was
	// made), on the Client's goroutine: it must return quickly.
	OnDialFailed func(server string, err error)
}

// Client is a session that outlives its connections: it dials the servers of its
// HostList, one after the other, until one answers; when the connection ends it
// resumes the session on the next server, with its last zxid (so that no server behind
// what the client has seen takes it), its credentials and its watches. When the session
// expires (the server says so, no server answered for the whole session timeout, or
// GiveUp), it tells so, ends the session's watches and opens a new session. Its methods
// are safe for concurrent use.
//
// Notices (changes of state and watch events) and replies are delivered in one order,
// the servers' with the Client's changes of state among them: OnEvent is called on a
// goroutine of the Client, one notice at a time, and when a request returns, OnEvent
// has returned for every notice before its reply, across reconnections too. OnEvent
// must not wait for a reply of the same Client (that reply waits for OnEvent), and
// must not call Close.
//
// A request is sent on the connection of the moment. One made while there is none
// waits for the next, in the order requests were made, and is sent only in the session
// it was made in: if the session expires first, it fails with ErrSessionExpired (one
// made while a new session is being opened waits for it). Its ctx bounds the wait: a
// request whose ctx ends before it was sent is never sent. A request sent on a
// connection that then fails returns an error wrapping ErrConnectionLost (and may have
// been applied); it is not sent again.
type Client struct {
	cfg   ClientConfig
	hosts *HostList
	reg   registry
	order atomic.Uint64 // numbers watch events and the replies of watched reads (Seq)
	out   *stream
	quit  chan struct{} // closed by Close
	kick  chan struct{} // GiveUp wakes the run loop
	wg    sync.WaitGroup

	mu       sync.Mutex
	state    zk.State
	conn     *Conn   // the connection requests go to, nil while there is none
	server   string  // conn's server
	session  Session // the current session; ID 0 while a new one is being opened
	lastZxid int64
	waiting  []waitingReq // requests made while there is no connection, in order
	err      error        // why the Client ended (ErrClosed, an auth failure)
	giveUp   bool
	abort    context.CancelFunc // ends the dial under way
	closed   bool
}

// waitingReq is a request waiting for a connection.
type waitingReq struct {
	cl     *call
	opcode int32
	rec    request
}

// NewClient starts a Client: it connects in the background (its first notice is
// zk.StateConnecting, then zk.StateHasSession once a server opened a session).
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Hosts == nil || cfg.Hosts.Len() == 0 {
		return nil, errors.New("wire: no servers")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Chroot == "/" {
		cfg.Chroot = ""
	}
	if cfg.Chroot != "" && (!strings.HasPrefix(cfg.Chroot, "/") || strings.HasSuffix(cfg.Chroot, "/")) {
		return nil, fmt.Errorf("wire: invalid chroot %q", cfg.Chroot)
	}
	if cfg.SASL != nil && cfg.SASL.Username == "" {
		return nil, errors.New("wire: SASL DIGEST-MD5 without a user name")
	}
	if cfg.SASL != nil {
		sasl := *cfg.SASL // the caller's may change
		cfg.SASL = &sasl
	}
	c := &Client{cfg: cfg, hosts: cfg.Hosts, quit: make(chan struct{}), kick: make(chan struct{}, 1),
		state: zk.StateConnecting}
	c.out = newStream(cfg.OnEvent)
	c.out.notice(Notice{Type: zk.EventSession, State: zk.StateConnecting})
	c.wg.Add(1)
	go c.run()
	return c, nil
}

// State returns the Client's state: the State of its last change of state.
func (c *Client) State() zk.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Session returns the current session (ID 0 while a new one is being opened).
func (c *Client) Session() Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.session
	s.Password = nil
	return s
}

// Server returns the server of the current connection, or "" when there is none.
func (c *Client) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return ""
	}
	return c.server
}

// LastZxid returns the highest zxid the Client has seen in a reply. It is kept across
// sessions: no server behind it takes the Client's connection, so that what it reads
// never goes back in time.
func (c *Client) LastZxid() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		return max(c.lastZxid, c.conn.LastZxid())
	}
	return c.lastZxid
}

// GiveUp ends the current session on the client's side, without closing it on the
// server (which expires it after its timeout): the Client reports zk.StateExpired with
// ErrSessionGivenUp, ends its watches and opens a new session, as after an expiry.
// Requests awaiting replies fail with an error wrapping both ErrConnectionLost and
// ErrSessionGivenUp. It is for a caller that must assume the session is lost
// (Curator's simulated Lost).
func (c *Client) GiveUp() {
	c.mu.Lock()
	if c.closed || c.session.ID == 0 {
		c.mu.Unlock()
		return
	}
	c.giveUp = true
	conn, abort := c.conn, c.abort
	c.mu.Unlock()
	if abort != nil {
		abort()
	}
	if conn != nil {
		conn.abandon(ErrSessionGivenUp)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Close ends the Client: it sends closeSession on the connection open now, if any,
// and waits up to two thirds of the session timeout (at most 2 s) for the server to
// confirm it; without a connection the session is left to expire. Requests waiting for
// their replies or for a connection fail with ErrClosed. The last notice is StateClosed.
// Close waits for the Client's goroutines, and may be called more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	if c.err == nil {
		c.err = ErrClosed
	}
	conn, abort, waiting := c.conn, c.abort, c.waiting
	c.waiting = nil
	c.mu.Unlock()
	if abort != nil {
		abort()
	}
	for _, w := range waiting {
		c.out.reply(w.cl, reply{err: ErrClosed})
	}
	var err error
	if conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), min(conn.Session().Timeout*2/3, maxCloseWait))
		err = conn.CloseSession(ctx)
		cancel()
	}
	close(c.quit)
	c.wg.Wait()
	c.mu.Lock()
	c.state = StateClosed
	sid := c.session.ID
	c.mu.Unlock()
	c.out.notice(Notice{Type: zk.EventSession, State: StateClosed, Session: sid})
	c.out.close()
	if err != nil && !errors.Is(err, ErrConnectionLost) {
		return err
	}
	return nil
}

// submit hands a request over: to the connection, or to the waiting requests.
func (c *Client) submit(cl *call, opcode int32, rec request) {
	cl.ordered = true
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		cl.done <- reply{err: c.err}
		return
	}
	if len(c.waiting) == 0 && c.conn != nil && c.conn.enqueue(cl, opcode, 0, rec) {
		return
	}
	c.waiting = append(c.waiting, waitingReq{cl, opcode, rec})
}

// withdraw removes cl from the waiting requests; false if it was sent (or answered).
func (c *Client) withdraw(cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.waiting {
		if w.cl == cl {
			c.waiting = append(c.waiting[:i:i], c.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// do sends a request and decodes its reply (see decodeReply).
func (c *Client) do(ctx context.Context, opcode int32, req request, rsp response, hook func(*reply) []Notice) (int64, error) {
	r, err := c.roundTrip(ctx, opcode, req, hook)
	if err != nil {
		return 0, err
	}
	return decodeReply(r, rsp)
}

// doSeq is do for a read with a watch: it also returns the reply's Seq (0 without a
// watch, or when no reply came).
func (c *Client) doSeq(ctx context.Context, opcode int32, req request, rsp response, hook func(*reply) []Notice) (int64, uint64, error) {
	r, err := c.roundTrip(ctx, opcode, req, hook)
	if err != nil {
		return 0, 0, err
	}
	zxid, err := decodeReply(r, rsp)
	return zxid, r.seq, err
}

// roundTrip sends a request and waits for its reply, or for ctx to end.
func (c *Client) roundTrip(ctx context.Context, opcode int32, req request, hook func(*reply) []Notice) (reply, error) {
	if err := ctx.Err(); err != nil {
		return reply{}, err
	}
	cl := newCall()
	cl.hook = hook
	c.submit(cl, opcode, req)
	select {
	case r := <-cl.done:
		return r, nil
	case <-ctx.Done():
		c.withdraw(cl)
		return reply{}, ctx.Err()
	}
}

// failUnsent fails the requests waiting for a connection with ErrNotSent.
func (c *Client) failUnsent() {
	c.mu.Lock()
	waiting := c.waiting
	c.waiting = nil
	c.mu.Unlock()
	for _, w := range waiting {
		w.cl.done <- reply{err: ErrNotSent}
	}
}

// dialEvents takes a connection's events: held while Dial restores the session, so
// that they come after the change of state that announces the connection. It tells of
// the connection's failure too, before the requests it carried fail.
type dialEvents struct {
	c    *Client
	addr string
	mu   sync.Mutex
	live bool
	sid  int64
	held []Notice
}

// lost queues zk.StateDisconnected for a connection that was announced.
func (d *dialEvents) lost(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live {
		d.c.out.notice(Notice{Type: zk.EventSession, State: zk.StateDisconnected, Session: d.sid, Server: d.addr, Err: err})
	}
}

func (d *dialEvents) on(ev Event) {
	n := Notice{Type: ev.Type, State: ev.State, Path: ev.Path, Ended: d.c.reg.fired(ev), Seq: d.c.order.Add(1)}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live {
		d.held = append(d.held, n)
		return
	}
	n.Session = d.sid
	d.c.out.notice(n)
}

// publish queues first, then the events held, and lets the next events through.
func (d *dialEvents) publish(first Notice) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sid = first.Session
	d.c.out.notice(first)
	for _, n := range d.held {
		n.Session = d.sid
		d.c.out.notice(n)
	}
	d.held, d.live = nil, true
}

// run is the Client's goroutine: it connects, waits for the connection to end, and
// connects again, until Close.
func (c *Client) run() {
	defer c.wg.Done()
	var heard time.Time // when a server last answered on the current session
	for {
		c.mu.Lock()
		if c.closed || c.err != nil {
			c.mu.Unlock()
			return
		}
		sess, last, giveUp := c.session, c.lastZxid, c.giveUp
		c.giveUp = false
		c.mu.Unlock()
		if sess.ID != 0 && giveUp {
			c.expire(sess.ID, ErrSessionGivenUp)
			continue
		}
		// The rule for an expiry on the client's side: no server answered for the whole
		// session timeout since the last frame received on the session.
		var deadline time.Time
		if sess.ID != 0 {
			deadline = heard.Add(sess.Timeout)
			if !time.Now().Before(deadline) {
				c.expire(sess.ID, ErrSessionTimedOut)
				continue
			}
		}
		addr, round := c.hosts.next()
		if round && c.cfg.FailUnsentEachRound {
			c.failUnsent()
		}
		if round && !c.pause(spinDelay, deadline) {
			return
		}
		conn, err := c.dial(addr, sess, last, deadline)
		if err != nil {
			switch {
			case errors.Is(err, ErrSessionExpired):
				c.expire(sess.ID, err)
			case errors.Is(err, zk.ErrAuthFailed):
				c.authFailed(sess.ID, err)
				return
			}
			continue
		}
		c.hosts.connected()
		heard = c.serve(conn)
	}
}

// pause waits for d, or until deadline (when not zero), GiveUp or Close; false on Close.
func (c *Client) pause(d time.Duration, deadline time.Time) bool {
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.kick:
	case <-c.quit:
		return false
	}
	return true
}

// dial makes one connection attempt: within the session timeout divided by the number
// of servers (the Java client's bound, at least minHandshakeBound), and never past the
// session's expiry deadline.
func (c *Client) dial(addr string, sess Session, last int64, deadline time.Time) (*Conn, error) {
	timeout := sess.Timeout
	if timeout <= 0 {
		timeout = c.cfg.SessionTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(timeout/time.Duration(c.hosts.Len()), minHandshakeBound))
	defer cancel()
	if !deadline.IsZero() {
		var cancel2 context.CancelFunc
		ctx, cancel2 = context.WithDeadline(ctx, deadline)
		defer cancel2()
	}
	c.mu.Lock()
	if c.closed || c.giveUp {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.abort = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.abort = nil
		c.mu.Unlock()
	}()
	ev := &dialEvents{c: c, addr: addr}
	cfg := Config{Dialer: c.cfg.Dialer, SessionTimeout: c.cfg.SessionTimeout, Session: sess, LastZxid: last,
		Chroot: c.cfg.Chroot, SASL: c.cfg.SASL, Auth: c.cfg.Auth, OnEvent: ev.on, MaxFrame: c.cfg.MaxFrame, order: c.out, onLost: ev.lost}
	if sess.ID != 0 {
		cfg.Watches = c.reg.snapshot()
	}
	conn, err := Dial(ctx, addr, cfg)
	if err != nil {
		if c.cfg.OnDialFailed != nil {
			c.cfg.OnDialFailed(addr, err)
		}
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.giveUp {
		c.wg.Add(1) // not closed under c.mu: Close waits for it
		go func() { defer c.wg.Done(); conn.Close() }()
		return nil, ErrClosed
	}
	s := conn.Session()
	c.session, c.conn, c.server, c.state = s, conn, addr, zk.StateHasSession
	ev.publish(Notice{Type: zk.EventSession, State: zk.StateHasSession, Session: s.ID, NewSession: s.ID != sess.ID, Server: addr, Timeout: s.Timeout})
	// The requests made while there was no connection go first, in order.
	for i, w := range c.waiting {
		if !conn.enqueue(w.cl, w.opcode, 0, w.rec) {
			c.waiting = c.waiting[i:]
			return conn, nil
		}
	}
	c.waiting = nil
	return conn, nil
}

// serve waits for conn to end, and returns when its server last answered.
func (c *Client) serve(conn *Conn) time.Time {
	select {
	case <-conn.Done():
	case <-c.quit:
	}
	conn.Close() // waits for its goroutines: every reply and event it read is in the stream
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = nil
	c.lastZxid = max(c.lastZxid, conn.LastZxid())
	if c.closed {
		return conn.lastHeard()
	}
	c.state = zk.StateDisconnected // told by dialEvents.lost, before the requests failed
	return conn.lastHeard()
}

// expire ends session sid: the change of state, the end of its watches, the failure of
// the requests waiting for a connection of it; then a new session is looked for.
func (c *Client) expire(sid int64, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session = Session{}
	c.state = zk.StateConnecting
	waiting := c.waiting
	c.waiting = nil
	c.out.notice(Notice{Type: zk.EventSession, State: zk.StateExpired, Session: sid, Err: cause})
	for _, n := range c.reg.drop(sid, cause) {
		c.out.notice(n)
	}
	for _, w := range waiting {
		c.out.reply(w.cl, reply{err: cause})
	}
	c.out.notice(Notice{Type: zk.EventSession, State: zk.StateConnecting})
}

// authFailed ends the Client: a server refused a credential, as every server will.
func (c *Client) authFailed(sid int64, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = cause
	c.state = zk.StateAuthFailed
	waiting := c.waiting
	c.waiting = nil
	c.out.notice(Notice{Type: zk.EventSession, State: zk.StateAuthFailed, Session: sid, Err: cause})
	for _, w := range waiting {
		c.out.reply(w.cl, reply{err: cause})
	}
}
