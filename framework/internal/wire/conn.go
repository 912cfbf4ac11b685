package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Dialer opens the transport to one server: a TCP connection, or a TLS one over it. It
// must honour ctx.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// DefaultMaxFrame is the largest frame a Conn reads or writes when Config.MaxFrame is
// zero: 4 MiB, above a 1 MB node (ZooKeeper's default jute.maxbuffer) with its headers.
const DefaultMaxFrame = 4 << 20

// minHandshakeBound is the least time a handshake is given when ctx has no deadline: a
// tiny requested session timeout is raised by the server, and must not fail a handshake
// with a busy one.
const minHandshakeBound = time.Second

// maxPingInterval bounds the time between two pings whatever the session timeout, as
// the Java client does.
const maxPingInterval = 10 * time.Second

// Session is what identifies a session to the server: a Conn's Session, given to the
// Config of a later Dial, resumes it on a new connection.
type Session struct {
	// ID is the session id the server assigned.
	ID int64
	// Password is the session's password, which resuming it needs.
	Password []byte
	// Timeout is the session timeout the server negotiated.
	Timeout time.Duration
	// ReadOnly says that the server is in read-only mode: its session is not a global
	// one and writes fail with code CodeNotReadOnly.
	ReadOnly bool
}

// Auth is a credential sent with an auth packet (addAuth), such as scheme "digest" with
// "user:password".
type Auth struct {
	Scheme string
	Auth   []byte
}

// Watches lists the watches to set again on a resumed session (setWatches): the server
// fires at once those whose nodes changed after Config.LastZxid.
type Watches struct {
	Data, Exist, Child              []string
	Persistent, PersistentRecursive []string
}

func (w Watches) empty() bool {
	return len(w.Data)+len(w.Exist)+len(w.Child)+len(w.Persistent)+len(w.PersistentRecursive) == 0
}

// Event is a watch event the server sent.
type Event struct {
	// Type is what happened (zk.EventNodeCreated, ..., EventDataWatchRemoved, ...).
	Type zk.EventType
	// State is the session state the server reported, zk.StateSyncConnected.
	State zk.State
	// Path is the node's path, without the chroot.
	Path string
	// Zxid is the zxid in the notification's header: ZooKeeper 3.8 sends -1 there.
	Zxid int64
}

// Config is what Dial needs beyond the server's address. The zero value asks for a new
// session with a 10 s timeout over plain TCP.
type Config struct {
	// Dialer opens the connection. The default is a net.Dialer.
	Dialer Dialer
	// SessionTimeout is the timeout requested for a new session (the server bounds it
	// between its minSessionTimeout and maxSessionTimeout). The default is 10 s. When
	// Dial's ctx has no deadline, it also bounds the handshake (and at least 1 s).
	SessionTimeout time.Duration
	// Session, when its ID is not zero, is the session to resume.
	Session Session
	// LastZxid is the highest zxid the client has seen (Conn.LastZxid of the previous
	// connection). A server behind it refuses the connection, so that the client never
	// sees its view of the data go back in time.
	LastZxid int64
	// CanBeReadOnly accepts a server in read-only mode. The default refuses one.
	CanBeReadOnly bool
	// Chroot, if not empty, is prefixed to every path sent and removed from every path
	// received, like a connect string's "/chroot" suffix. It starts with "/".
	Chroot string
	// SASL, when not nil, authenticates the connection with SASL DIGEST-MD5 right after
	// the handshake, before Auth, Watches and any request (as the Java client does); the
	// server then knows it as the "sasl" identity SASL.Username. Dial fails with an error
	// wrapping zk.ErrAuthFailed when the server refuses the password (or has no SASL
	// login configured).
	SASL *SASLDigest
	// Auth are sent, in order, right after the handshake (and SASL); Dial fails if one is
	// refused.
	Auth []Auth
	// Watches are set again right after Auth, relative to LastZxid.
	Watches Watches
	// OnEvent receives the watch events. See Conn for when and how it is called. The
	// default drops them.
	OnEvent func(Event)
	// MaxFrame is the largest frame read or written. The default is DefaultMaxFrame.
	MaxFrame int

	// order, when set, delivers the replies (a Client's ordered stream) instead of the
	// Conn handing them straight to their callers.
	order *stream
	// onLost, when set, is told why the connection failed (not when it was closed), on
	// the goroutine that saw it, before the requests awaiting replies fail.
	onLost func(error)
}

// Conn is one connection to a ZooKeeper server, carrying one session: Dial opens a new
// session or resumes one, and the Conn ends for good when the connection breaks, Close
// closes it or CloseSession ends the session. A new Dial with its Session and LastZxid
// resumes the session on another connection. Its methods are safe for concurrent use.
//
// Requests are pipelined: each is sent as soon as it is made, and the server answers
// them in the order it received them. Watch events are passed to Config.OnEvent on the
// Conn's reading goroutine, one at a time, in the order the server sent them, and
// interleaved with replies in that order too: when a request returns, OnEvent has
// returned for every event the server sent before the request's reply. OnEvent must
// therefore return quickly, and must neither wait for a reply of the same Conn nor call
// its Close or CloseSession (which wait for the goroutine that runs OnEvent); while it
// runs, no reply is delivered.
type Conn struct {
	nc       net.Conn
	cfg      Config
	session  Session
	readTO   time.Duration
	pingTO   time.Duration
	maxFrame int
	lastZxid atomic.Int64
	heard    atomic.Int64 // when the last frame came from the server, in Unix ns
	closing  atomic.Bool  // CloseSession was called: the end of the connection is ours

	mu      sync.Mutex
	xid     int32
	pending []*call // sent or queued, awaiting their replies in order
	auths   []*call // auth packets awaiting their replies (answered out of order)
	outq    [][]byte
	err     error // set once: why the Conn ended
	wake    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
}

// call is one request awaiting its reply.
type call struct {
	xid  int32
	done chan reply // buffered: the reader never blocks on a caller that left
	// hook, when set, runs on the reading goroutine for a reply that came (not for a
	// request that failed without one), before the reply is delivered and before the
	// next frame is read: a Client registers watches there. The notices it returns are
	// delivered before the reply.
	hook func(r *reply) []Notice
	// ordered: the reply goes through the Config's ordered stream (a Client's request;
	// not those Dial sends to restore the session).
	ordered bool
}

func newCall() *call { return &call{done: make(chan reply, 1)} }

// reply is a request's outcome: the reply's header and body, or why none came.
type reply struct {
	zxid int64
	seq  uint64 // the Client's order, for a read with a watch (see Notice.Seq)
	code int32
	body []byte
	err  error
}

// HandshakeError is Dial's error when the connection was opened and the handshake (the
// connect request and its reply, SASL, the credentials, the watches) failed.
type HandshakeError struct {
	Server string
	Err    error
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("wire: handshake with %s: %v", e.Server, e.Err)
}

// Unwrap returns the cause.
func (e *HandshakeError) Unwrap() error { return e.Err }

// Dial connects to the server at addr (host:port) and opens or resumes a session, then
// authenticates with cfg.SASL and sends cfg.Auth and cfg.Watches. It returns when the
// server has answered all of them, or with an error when ctx ends first; a server that
// says the session expired gives ErrSessionExpired, one that refuses a credential an
// error wrapping zk.ErrAuthFailed. The caller bounds the whole of it with ctx's deadline (the Java
// client gives a connection attempt the session timeout divided by the number of
// servers); without one, the handshake is bounded by the session timeout.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
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
	dial := cfg.Dialer
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	hctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		hctx, cancel = context.WithTimeout(ctx, max(cfg.SessionTimeout, minHandshakeBound))
	}
	defer cancel()
	nc, err := dial(hctx, "tcp", addr)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil && !errors.Is(err, cerr) {
			return nil, fmt.Errorf("wire: dial %s: %w (%w)", addr, cerr, err)
		}
		return nil, fmt.Errorf("wire: dial %s: %w", addr, err)
	}
	rsp, err := handshake(hctx, nc, &cfg)
	if err != nil {
		nc.Close()
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, &HandshakeError{Server: addr, Err: cerr}
		}
		return nil, &HandshakeError{Server: addr, Err: err}
	}
	if rsp.timeout <= 0 {
		nc.Close()
		return nil, ErrSessionExpired
	}
	if rsp.readOnly && !cfg.CanBeReadOnly {
		nc.Close()
		return nil, ErrReadOnlyServer
	}
	var xid int32
	if cfg.SASL != nil {
		if xid, err = authenticateSASL(hctx, nc, cfg.SASL, cfg.MaxFrame); err != nil {
			nc.Close()
			if cerr := ctxErr(ctx); cerr != nil && !errors.Is(err, zk.ErrAuthFailed) {
				return nil, fmt.Errorf("wire: SASL with %s: %w", addr, cerr)
			}
			return nil, fmt.Errorf("wire: SASL DIGEST-MD5 with %s: %w", addr, err)
		}
	}
	timeout := time.Duration(rsp.timeout) * time.Millisecond
	c := &Conn{
		nc:  nc,
		cfg: cfg,
		session: Session{
			ID:       rsp.sessionID,
			Password: rsp.password,
			Timeout:  timeout,
			ReadOnly: rsp.readOnly,
		},
		readTO:   timeout * 2 / 3,
		maxFrame: cfg.MaxFrame,
		xid:      xid, // the last one SASL used
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	c.pingTO = min(c.readTO/2, maxPingInterval)
	c.lastZxid.Store(cfg.LastZxid)
	c.heard.Store(time.Now().UnixNano())
	c.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	if err := c.restore(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ctxErr is ctx.Err(), or DeadlineExceeded once ctx's deadline passed: a connection's
// deadline set from it may fire before ctx's own timer.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// handshake sends the connect request and reads the server's answer, within ctx.
func handshake(ctx context.Context, nc net.Conn, cfg *Config) (*connectResponse, error) {
	release := bound(ctx, nc)
	defer release()
	password := cfg.Session.Password
	if cfg.Session.ID == 0 || password == nil {
		password = make([]byte, 16)
	}
	req := &connectRequest{
		lastZxidSeen: cfg.LastZxid,
		timeout:      int32(cfg.SessionTimeout / time.Millisecond),
		sessionID:    cfg.Session.ID,
		password:     password,
		readOnly:     cfg.CanBeReadOnly,
	}
	frame := newFrame()
	req.encode(frame)
	if _, err := nc.Write(frame.finish()); err != nil {
		return nil, err
	}
	body, err := readFrame(nc, cfg.MaxFrame)
	if err != nil {
		return nil, err
	}
	rsp := &connectResponse{}
	d := &decoder{b: body}
	rsp.decode(d)
	if d.err != nil {
		return nil, d.err
	}
	if err := release(); err != nil {
		return nil, err
	}
	return rsp, nil
}

// bound makes nc's reads and writes fail once ctx ends (at its deadline, or when it is
// cancelled). release undoes that, once (later calls do nothing), and returns ctx's
// error if it ended first.
func bound(ctx context.Context, nc net.Conn) (release func() error) {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			if !stop() {
				err = ctx.Err()
				return
			}
			nc.SetDeadline(time.Time{})
		})
		return err
	}
}

// restore sends the auth packets and the watches of the Config, and waits for their
// replies.
func (c *Conn) restore(ctx context.Context) error {
	var calls []*call
	for _, a := range c.cfg.Auth {
		calls = append(calls, c.sendAuth(a))
	}
	if !c.cfg.Watches.empty() {
		for _, r := range c.setWatchesBatches(c.cfg.Watches) {
			op := opSetWatches
			if r.v2 {
				op = opSetWatches2
			}
			calls = append(calls, c.send(op, xidSetWatches, r))
		}
	}
	for _, cl := range calls {
		r := c.wait(ctx, cl)
		if r.err == nil {
			r.err = codeError(r.code, r.zxid)
		}
		if r.err != nil {
			return fmt.Errorf("wire: restoring the session: %w", r.err)
		}
	}
	return nil
}

// setWatchesBatchSize bounds the paths' bytes in one setWatches request, as the Java
// client does, so that a client with many watches stays below the server's largest
// frame.
const setWatchesBatchSize = 128 << 10

// setWatchesBatches splits the watches into setWatches requests; SetWatches2 only for
// those that carry persistent watches, which servers before 3.6 do not know.
func (c *Conn) setWatchesBatches(w Watches) []*setWatchesRequest {
	lists := [][]string{w.Data, w.Exist, w.Child, w.Persistent, w.PersistentRecursive}
	var out []*setWatchesRequest
	cur, size := &setWatchesRequest{relativeZxid: c.cfg.LastZxid}, 0
	for i, l := range lists {
		for _, p := range l {
			if size >= setWatchesBatchSize {
				out, cur, size = append(out, cur), &setWatchesRequest{relativeZxid: c.cfg.LastZxid}, 0
			}
			p = c.full(p)
			size += len(p)
			switch i {
			case 0:
				cur.data = append(cur.data, p)
			case 1:
				cur.exist = append(cur.exist, p)
			case 2:
				cur.child = append(cur.child, p)
			case 3:
				cur.persistent, cur.v2 = append(cur.persistent, p), true
			case 4:
				cur.recurse, cur.v2 = append(cur.recurse, p), true
			}
		}
	}
	if size > 0 {
		out = append(out, cur)
	}
	return out
}

// Session returns the session the Conn carries.
func (c *Conn) Session() Session {
	s := c.session
	s.Password = append([]byte(nil), s.Password...)
	return s
}

// LastZxid returns the highest zxid of the replies received so far (or Config.LastZxid,
// if higher): what a later Dial that resumes the session needs.
func (c *Conn) LastZxid() int64 { return c.lastZxid.Load() }

// lastHeard returns when the last frame came from the server (the handshake's reply at
// first).
func (c *Conn) lastHeard() time.Time { return time.Unix(0, c.heard.Load()) }

// Done is closed when the Conn has ended; Err says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns nil while the Conn works, then why it ended: ErrClosed after Close, or an
// error wrapping ErrConnectionLost.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection without ending the session, which lives on until its
// timeout: a Dial with the Conn's Session may resume it. Requests awaiting their
// replies fail with ErrClosed. Close waits for the Conn's goroutines and may be called
// more than once.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	c.wg.Wait()
	return nil
}

// abandon ends the Conn as a failed connection would (its requests fail with
// ErrConnectionLost wrapping cause), and waits for its goroutines.
func (c *Conn) abandon(cause error) {
	c.fail(lost(cause))
	c.wg.Wait()
}

// CloseSession ends the session (closeSession), so that its ephemeral nodes go at once,
// then closes the connection. It returns an error if the server did not confirm the
// end before ctx ended or the connection broke; the Conn is closed in any case.
func (c *Conn) CloseSession(ctx context.Context) error {
	c.closing.Store(true)
	r := c.wait(ctx, c.send(opCloseSession, 0, nil))
	c.Close()
	if r.err == nil {
		r.err = codeError(r.code, r.zxid)
	}
	if r.err != nil {
		return fmt.Errorf("wire: closeSession: %w", r.err)
	}
	return nil
}

// fail ends the Conn with err, once: it closes the connection and fails every request
// awaiting its reply.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if c.closing.Load() {
		err = ErrClosed
	}
	c.err = err
	pending, auths := c.pending, c.auths
	c.pending, c.auths, c.outq = nil, nil, nil
	close(c.done)
	c.mu.Unlock()
	c.nc.Close()
	if c.cfg.onLost != nil && !errors.Is(err, ErrClosed) {
		c.cfg.onLost(err)
	}
	for _, cl := range pending {
		c.deliver(cl, reply{err: err})
	}
	for _, cl := range auths {
		cl.done <- reply{err: err}
	}
}

// deliver hands a reply to its call: through the Config's ordered stream if it has one.
func (c *Conn) deliver(cl *call, r reply) {
	if c.cfg.order != nil && cl.ordered {
		c.cfg.order.reply(cl, r)
		return
	}
	if cl.hook != nil && r.err == nil {
		cl.hook(&r)
	}
	cl.done <- r
}

// lost is the error that ends a Conn whose connection failed: it wraps both
// ErrConnectionLost and the cause.
func lost(cause error) error {
	return fmt.Errorf("%w: %w", ErrConnectionLost, cause)
}

// send queues a request (nil rec: header only) and returns its call. With xid 0 it
// takes the next ordinary xid. A Conn that has ended answers at once with its error.
func (c *Conn) send(opcode, xid int32, rec request) *call {
	cl := newCall()
	if !c.enqueue(cl, opcode, xid, rec) {
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		cl.done <- reply{err: err}
	}
	return cl
}

// enqueue queues cl's request; false (and nothing queued) if the Conn has ended. A
// request beyond the largest frame is answered at once with ErrFrameTooLarge.
func (c *Conn) enqueue(cl *call, opcode, xid int32, rec request) bool {
	f := newFrame()
	hdr := requestHeader{opcode: opcode}
	hdr.encode(f)
	if rec != nil {
		rec.encode(f)
	}
	if len(f.b)-4 > c.maxFrame {
		cl.done <- reply{err: ErrFrameTooLarge}
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	if xid == 0 {
		c.xid++
		if c.xid <= 0 { // wrapped: skip zero and the reserved negative xids
			c.xid = 1
		}
		xid = c.xid
	}
	cl.xid = xid
	binary.BigEndian.PutUint32(f.b[4:], uint32(xid))
	switch opcode {
	case opPing:
	case opAuth:
		c.auths = append(c.auths, cl)
	default:
		c.pending = append(c.pending, cl)
	}
	c.outq = append(c.outq, f.finish())
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// sendAuth queues an auth packet.
func (c *Conn) sendAuth(a Auth) *call {
	return c.send(opAuth, xidAuth, &authPacket{scheme: a.Scheme, auth: a.Auth})
}

// wait waits for a call's reply, or for ctx to end. A reply that comes after ctx ended
// is dropped; the request may have been applied.
func (c *Conn) wait(ctx context.Context, cl *call) reply {
	select {
	case r := <-cl.done:
		return r
	case <-ctx.Done():
		return reply{err: ctx.Err()}
	}
}

// do sends a request and decodes its reply's body into rsp (nil: none expected). It
// returns the reply's zxid, and the server's error code as an *Error.
func (c *Conn) do(ctx context.Context, opcode int32, req request, rsp response) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return decodeReply(c.wait(ctx, c.send(opcode, 0, req)), rsp)
}

// decodeReply decodes a reply's body into rsp (nil: none expected); it returns the
// reply's zxid, and the server's error code as an *Error.
func decodeReply(r reply, rsp response) (int64, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.code != 0 {
		return r.zxid, codeError(r.code, r.zxid)
	}
	if rsp != nil {
		d := &decoder{b: r.body}
		rsp.decode(d)
		if d.err != nil {
			return r.zxid, d.err
		}
	}
	return r.zxid, nil
}

// readLoop reads the server's frames until the connection fails: replies go to their
// calls, events to OnEvent.
func (c *Conn) readLoop() {
	defer c.wg.Done()
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.readTO))
		body, err := readFrame(c.nc, c.maxFrame)
		if err == nil {
			c.heard.Store(time.Now().UnixNano())
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.fail(lost(fmt.Errorf("no frame from the server for %v: %w", c.readTO, err)))
			} else {
				c.fail(lost(fmt.Errorf("read: %w", err)))
			}
			return
		}
		if err := c.dispatch(body); err != nil {
			c.fail(lost(err))
			return
		}
	}
}

// dispatch handles one frame from the server.
func (c *Conn) dispatch(body []byte) error {
	d := &decoder{b: body}
	var h replyHeader
	h.decode(d)
	if d.err != nil {
		return d.err
	}
	rest := body[d.off:]
	switch h.xid {
	case xidNotification:
		var ev watcherEvent
		ev.decode(d)
		if d.err != nil {
			return d.err
		}
		if c.cfg.OnEvent != nil {
			c.cfg.OnEvent(Event{Type: zk.EventType(ev.typ), State: zk.State(ev.state), Path: c.strip(ev.path), Zxid: h.zxid})
		}
		return nil
	case xidPing:
		return nil
	case xidAuth:
		c.mu.Lock()
		if len(c.auths) == 0 {
			c.mu.Unlock()
			return fmt.Errorf("%w: auth reply for no auth packet", ErrMalformed)
		}
		cl := c.auths[0]
		c.auths = c.auths[1:]
		c.mu.Unlock()
		cl.done <- reply{zxid: h.zxid, code: h.err}
		return nil
	}
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return fmt.Errorf("%w: reply xid %d for no request", ErrMalformed, h.xid)
	}
	cl := c.pending[0]
	if cl.xid != h.xid {
		c.mu.Unlock()
		return fmt.Errorf("%w: reply xid %d out of order: expected %d", ErrMalformed, h.xid, cl.xid)
	}
	c.pending = c.pending[1:]
	c.mu.Unlock()
	if h.zxid > c.lastZxid.Load() {
		c.lastZxid.Store(h.zxid) // only this goroutine stores after Dial
	}
	c.deliver(cl, reply{zxid: h.zxid, code: h.err, body: rest})
	return nil
}

// writeLoop writes the queued frames, and a ping whenever nothing was sent for pingTO.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	ping := time.NewTimer(c.pingTO)
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-ping.C:
			c.send(opPing, xidPing, nil)
			continue // the wake-up that send queued writes it
		case <-c.wake:
		}
		c.mu.Lock()
		q := c.outq
		c.outq = nil
		c.mu.Unlock()
		if len(q) == 0 {
			continue
		}
		c.nc.SetWriteDeadline(time.Now().Add(c.readTO))
		for _, f := range q {
			if _, err := c.nc.Write(f); err != nil {
				c.fail(lost(fmt.Errorf("write: %w", err)))
				return
			}
		}
		ping.Reset(c.pingTO)
	}
}

// full returns the server's path for a client path: with the chroot.
func (c *Conn) full(p string) string { return chroot(c.cfg.Chroot).full(p) }

// strip returns the client's path for a server path: without the chroot.
func (c *Conn) strip(p string) string { return chroot(c.cfg.Chroot).strip(p) }

// chroot is a chroot ("" for none), which maps the client's paths to the server's.
type chroot string

// full returns the server's path for a client path: with the chroot.
func (ch chroot) full(p string) string {
	if ch == "" {
		return p
	}
	if p == "/" {
		return string(ch)
	}
	return string(ch) + p
}

// strip returns the client's path for a server path: without the chroot.
func (ch chroot) strip(p string) string {
	switch {
	case ch == "":
		return p
	case p == string(ch):
		return "/"
	case strings.HasPrefix(p, string(ch)+"/"):
		return p[len(ch):]
	default:
		return p
	}
}

// newFrame starts a frame: four bytes for its length, filled in by finish.
func newFrame() *encoder { return &encoder{b: make([]byte, 4, 64)} }

// finish writes the frame's length and returns it.
func (e *encoder) finish() []byte {
	binary.BigEndian.PutUint32(e.b, uint32(len(e.b)-4))
	return e.b
}

// readFrame reads one length-prefixed frame.
func readFrame(r io.Reader, maxFrame int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || int64(n) > int64(maxFrame) {
		return nil, fmt.Errorf("%w: frame length %d outside 0..%d", ErrMalformed, n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}
