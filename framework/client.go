package framework

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/retry"
)

// stateSimulatedExpiry marks a synthetic event: the Suspended-too-long timer fired.
const stateSimulatedExpiry zk.State = -1000

// Client is a ZooKeeper client with Curator's semantics. Create it with New, then Start
// it; Close it when done. It is safe for concurrent use.
type Client struct {
	opts    options
	servers []string
	prefix  string // chroot and namespace, "" or "/a/b"

	conn    atomic.Pointer[connBox]
	connSeq atomic.Uint64 // numbers the connections: events of a replaced one are ignored
	closing chan struct{}
	wg      sync.WaitGroup // every goroutine the client starts, but those in cbs
	cbs     *callbacks     // goroutines that run user code: listeners, Go
	authed  chan struct{}  // closed once credentials were added
	deleter *deleter
	watches *watches
	ens     ensembleState // ensemble tracking (ensemble.go)
	// trackGate is closed once the ensemble tracker's first read was answered (or
	// failed), or at once without tracking: operations wait for it, as for authed, so
	// that the tracker's read goes first and never between a caller's requests.
	trackGate chan struct{}

	negotiated atomic.Int64 // negotiated session timeout, ns
	dialErr    atomic.Value // dialFailure: the last dial's or handshake's error, nil once a handshake succeeded
	requests   atomic.Uint64
	nsSettled  atomic.Bool // the namespace node was made (or found), or cannot be

	mu          sync.Mutex
	started     bool
	closed      bool
	state       State // last reported; 0 before the first connection
	connected   bool
	sessionID   int64
	gen         uint64
	lost        bool          // Lost reported for the current generation
	lossCh      chan struct{} // closed when leases of the current epoch may be lost
	connectedCh chan struct{} // closed when connected
	suspendSeq  uint64        // counts suspensions, to ignore stale expiry timers
	expiryTimer *time.Timer

	evMu     sync.Mutex
	evQueue  []sessionEvent
	evSignal chan struct{}

	lmu       sync.Mutex
	listeners []*listener
	stateQ    []queuedState
	queued    uint64 // states queued so far
	stateSig  chan struct{}
}

type sessionEvent struct {
	state   zk.State
	sid     int64
	seq     uint64 // for stateSimulatedExpiry
	connSeq uint64 // the connection it came from (0: the client's own timer)
}

// queuedState is a state change waiting for the listeners, numbered in order.
type queuedState struct {
	s   State
	seq uint64
}

type listener struct {
	from    uint64 // the first state number it hears: none queued before it registered
	fn      func(State)
	removed atomic.Bool
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New creates a client for connect (host:port,host:port[/chroot]). It validates the
// arguments and options but does not connect: call Start. The chroot follows ZooKeeper's
// path rules (no empty node name, no trailing '/'); a lone '/' means none.
func New(connect string, opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		opt(&o)
	}
	if o.err != nil {
		return nil, o.err
	}
	hosts, chroot, _ := strings.Cut(strings.TrimSpace(connect), "/")
	var servers []string
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("framework: %w: connect string %q names no server", ErrInvalidArgument, connect)
	}
	// The chroot is checked as ZooKeeper's client checks it: "/" alone is none, anything
	// else must be a valid path ("//" would put an empty node name before every path).
	prefix := ""
	if chroot != "" {
		prefix = "/" + chroot
		if err := ValidatePath(prefix); err != nil {
			return nil, fmt.Errorf("framework: chroot of %q: %w", connect, err)
		}
	}
	if o.namespace != "" {
		prefix = JoinPath(prefix, o.namespace)
	}
	c := &Client{
		opts:        o,
		servers:     servers,
		prefix:      prefix,
		closing:     make(chan struct{}),
		cbs:         newCallbacks(),
		authed:      make(chan struct{}),
		lossCh:      make(chan struct{}),
		connectedCh: make(chan struct{}),
		evSignal:    make(chan struct{}, 1),
		stateSig:    make(chan struct{}, 1),
	}
	c.deleter = newDeleter(c)
	c.watches = newWatches()
	c.trackGate = closedCh
	if o.tracksEnsemble() {
		c.trackGate = make(chan struct{})
		c.ens.connected = make(chan struct{}, 1)
	}
	for _, fn := range o.stateListeners {
		c.AddListener(fn)
	}
	return c, nil
}

// Connect creates a client, starts it and waits until it is connected or ctx ends. When
// ctx has no deadline it gives up after the connection timeout (WithConnectionTimeout)
// with an error wrapping ErrNotConnected that names the servers and the timeout.
func Connect(ctx context.Context, connect string, opts ...Option) (*Client, error) {
	c, err := New(connect, opts...)
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		wctx, cancel = context.WithTimeout(ctx, c.opts.connectionTimeout)
	}
	defer cancel()
	if err := c.BlockUntilConnected(wctx); err != nil {
		c.Close()
		cerr := &ConnectError{Servers: strings.Join(c.servers, ","), Dial: c.lastDialErr()}
		if ctx.Err() == nil && wctx.Err() != nil {
			cerr.Timeout, cerr.Err = c.opts.connectionTimeout, ErrNotConnected
		} else {
			cerr.Err = err
		}
		return nil, cerr
	}
	return c, nil
}

// ConnectError is Connect's error: no connection was made within the connection timeout
// (Err is ErrNotConnected) or before the caller's context ended (Err is the context's
// error). Dial is the last dial's error, when the last attempt failed to dial (a refused
// connection: errors.Is(err, syscall.ECONNREFUSED)). It matches both.
type ConnectError struct {
	Servers string        // the servers of the connect string
	Timeout time.Duration // the wait that ran out; 0 when the caller's context ended
	Err     error         // ErrNotConnected, or the context's error
	Dial    error         // the last dial's error, or nil
}

// Error says which servers, the last dial's error, and how long it waited:
// "framework: connect 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused
// (no connection within 2s)".
func (e *ConnectError) Error() string {
	why := strings.TrimPrefix(e.Err.Error(), "framework: ")
	if e.Timeout > 0 {
		why = fmt.Sprintf("no connection within %v", e.Timeout)
	}
	if e.Dial != nil {
		return fmt.Sprintf("framework: connect %s: %v (%s)", e.Servers, e.Dial, why)
	}
	return fmt.Sprintf("framework: connect %s: %s", e.Servers, why)
}

// Unwrap returns the cause and the last dial's error.
func (e *ConnectError) Unwrap() []error {
	if e.Dial == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Dial}
}

// dialFailure holds the last dial's error (nil: the last dial succeeded).
type dialFailure struct{ err error }

// recordDials returns d, noting each failed dial's error for Connect's error (a
// connection's handshake notes its own failure, and clears it once done: see
// handshakeConn.outcome).
func (c *Client) recordDials(d zk.Dialer) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := d(network, address, timeout)
		if err != nil {
			c.dialErr.Store(dialFailure{err})
		}
		return conn, err
	}
}

func (c *Client) lastDialErr() error {
	f, _ := c.dialErr.Load().(dialFailure)
	return f.err
}

// setNegotiated records the session timeout the server granted, and logs it at Warn
// when it is not the one asked for (the server clamps it to [2, 20] × its tickTime by
// default), once per change.
func (c *Client) setNegotiated(d time.Duration) {
	if d <= 0 {
		return
	}
	if old := time.Duration(c.negotiated.Swap(int64(d))); old != d && d != c.opts.sessionTimeout {
		c.opts.logger.Warn("the server changed the session timeout asked for", "component", "framework",
			"requested", c.opts.sessionTimeout, "negotiated", d)
	}
}

// zkLogger passes go-zookeeper's log lines to slog and picks the negotiated session
// timeout out of its "authenticated" line (go-zookeeper exposes it nowhere else). The
// handshake connection has read it before (handshakeConn), so that it is known when
// the client reports Connected: go-zookeeper logs this line after that.
type zkLogger struct{ c *Client }

func (l zkLogger) Printf(format string, args ...any) {
	if format == "authenticated: id=%d, timeout=%d" && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			l.c.setNegotiated(time.Duration(ms) * time.Millisecond)
		}
	}
	l.c.opts.logger.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}

// Start connects in the background. Operations wait for the connection (up to the
// connection timeout). Starting twice is an error.
func (c *Client) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.started {
		return ErrAlreadyStarted
	}
	c.started = true
	c.negotiated.Store(int64(c.opts.sessionTimeout))
	conn, err := c.dial()
	if err != nil {
		return err
	}
	c.conn.Store(&connBox{conn})
	c.wg.Add(2)
	go c.eventLoop()
	c.cbs.spawn(c.listenerLoop)
	go c.deleter.run()
	if c.opts.tracksEnsemble() {
		c.wg.Add(1)
		go c.trackEnsemble()
	}
	if len(c.opts.auth) == 0 || c.opts.wire { // our connection sends them itself
		close(c.authed)
	} else {
		c.wg.Add(1)
		go c.addAuth(conn, c.authed)
	}
	return nil
}

// dial starts a new connection (a new session); its events are tagged so that those of
// a connection replaced since are ignored.
func (c *Client) dial() (zkConn, error) {
	if c.opts.wire {
		return c.dialWire()
	}
	seq := c.connSeq.Add(1)
	var self atomic.Pointer[zk.Conn] // set once Connect returned; until then sid 0
	hosts, servers := c.newHostList()
	conn, _, err := zk.Connect(servers, c.opts.sessionTimeout,
		zk.WithDialer(c.recordDials(c.zkDialer())),
		zk.WithHostProvider(hosts),
		zk.WithLogger(zkLogger{c}),
		zk.WithEventCallback(func(ev zk.Event) {
			var key zkConn // nil until Connect returned
			var sid int64
			if conn := self.Load(); conn != nil {
				key, sid = gozk{conn}, conn.SessionID()
			}
			c.onEvent(seq, key, sid, ev)
		}))
	if err != nil {
		return nil, fmt.Errorf("framework: connect %v: %w", servers, err)
	}
	c.useHostList(hosts, servers)
	self.Store(conn)
	return gozk{conn}, nil
}

// replaceSessionLocked ends the current session and starts a new one: after a simulated
// Lost nothing of the lost session may linger (its ephemerals go when the server learns
// of the close, or at the latest when the session times out there). c.mu is held.
func (c *Client) replaceSessionLocked() {
	conn, err := c.dial()
	if err != nil {
		c.opts.logger.Error("starting a new session after a simulated Lost failed", "component", "framework", "err", err)
		return
	}
	old := c.conn.Swap(&connBox{conn}).zkConn
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		old.Close() // sends closeSession if it can; pending requests fail as connection loss
		c.watches.endConn(old)
	}()
	if len(c.opts.auth) > 0 && !c.opts.wire {
		c.authed = make(chan struct{})
		c.wg.Add(1)
		go c.addAuth(conn, c.authed)
	}
}

func (c *Client) addAuth(conn zkConn, authed chan struct{}) {
	defer c.wg.Done()
	for _, a := range c.opts.auth {
		for {
			c.countRequest("addAuth")
			err := conn.AddAuth(a.scheme, a.auth)
			if err == nil {
				break
			}
			c.opts.logger.Warn("adding auth failed", "component", "framework", "scheme", a.scheme, "err", err)
			if errors.Is(err, zk.ErrAuthFailed) {
				break // the server will have closed the session: operations report it
			}
			select {
			case <-c.closing:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	close(authed)
}

// onEvent runs on the connection's receive loop: it must not block. It queues the
// event; sid is the session it is about. An event of a replaced connection is dropped;
// handle drops those queued before.
func (c *Client) onEvent(connSeq uint64, conn zkConn, sid int64, ev zk.Event) {
	if ev.Type != zk.EventSession {
		c.watches.notify(conn, ev) // a node event, or a watch ended (EventNotWatching)
		return
	}
	if connSeq != c.connSeq.Load() {
		return
	}
	c.pushEvent(sessionEvent{state: ev.State, connSeq: connSeq, sid: sid})
}

func (c *Client) pushEvent(se sessionEvent) {
	c.evMu.Lock()
	c.evQueue = append(c.evQueue, se)
	c.evMu.Unlock()
	select {
	case c.evSignal <- struct{}{}:
	default:
	}
}

func (c *Client) eventLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.closing:
			return
		case <-c.evSignal:
		}
		c.evMu.Lock()
		q := c.evQueue
		c.evQueue = nil
		c.evMu.Unlock()
		for _, se := range q {
			c.handle(se)
		}
	}
}

// handle moves the state machine for one event. Only eventLoop calls it.
func (c *Client) handle(se sessionEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if se.connSeq != 0 && se.connSeq != c.connSeq.Load() {
		return // from a connection replaced since
	}
	switch se.state {
	case zk.StateHasSession:
		sid := se.sid
		if sid == 0 {
			sid = c.loadConn().SessionID()
		}
		if c.state == 0 {
			c.sessionID, c.gen = sid, 1
			c.setConnectedLocked(Connected)
			return
		}
		if sid != c.sessionID {
			c.markLostLocked()
			c.sessionID = sid
		}
		if !c.connected || c.lost {
			if c.lost {
				c.lost = false
				c.lossCh = make(chan struct{})
			}
			c.setConnectedLocked(Reconnected)
		}
	case zk.StateDisconnected:
		if !c.connected {
			return
		}
		c.connected = false
		c.connectedCh = make(chan struct{})
		c.emitLocked(Suspended)
		if c.opts.errorPolicy == StandardErrorPolicy {
			closeOnce(c.lossCh)
		}
		c.suspendSeq++
		seq := c.suspendSeq
		d := time.Duration(float64(c.negotiated.Load()) * c.opts.expiryFraction)
		if c.expiryTimer != nil {
			c.expiryTimer.Stop()
		}
		c.expiryTimer = time.AfterFunc(d, func() { c.pushEvent(sessionEvent{state: stateSimulatedExpiry, seq: seq}) })
	case zk.StateExpired:
		if c.connected {
			c.connected = false
			c.connectedCh = make(chan struct{})
			c.emitLocked(Suspended)
		}
		c.markLostLocked()
	case stateSimulatedExpiry:
		if !c.connected && se.seq == c.suspendSeq {
			c.opts.logger.Info("suspended longer than the session timeout; ending the session and starting a new one", "component", "framework")
			c.markLostLocked()
			c.replaceSessionLocked()
		}
	}
}

func (c *Client) setConnectedLocked(s State) {
	c.connected = true
	if c.expiryTimer != nil {
		c.expiryTimer.Stop()
		c.expiryTimer = nil
	}
	c.suspendSeq++
	closeOnce(c.connectedCh)
	select { // the ensemble tracker reads the configuration again (ensemble.go)
	case c.ens.connected <- struct{}{}:
	default:
	}
	if isClosed(c.lossCh) {
		c.lossCh = make(chan struct{})
	}
	c.emitLocked(s)
}

// markLostLocked reports Lost once per generation and starts the next generation.
func (c *Client) markLostLocked() {
	if c.lost {
		return
	}
	c.lost = true
	closeOnce(c.lossCh)
	c.gen++
	c.emitLocked(Lost)
}

func (c *Client) emitLocked(s State) {
	c.state = s
	c.opts.logger.Info("connection state", "component", "framework", "state", s.String(), "session", fmt.Sprintf("0x%x", c.sessionID))
	c.lmu.Lock()
	c.queued++
	c.stateQ = append(c.stateQ, queuedState{s, c.queued})
	c.lmu.Unlock()
	select {
	case c.stateSig <- struct{}{}:
	default:
	}
}

func closeOnce(ch chan struct{}) {
	if !isClosed(ch) {
		close(ch)
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// AddListener registers fn to be called with every connection state change that happens
// after it registered (a change already queued is not delivered to it), in order,
// one call at a time, on a goroutine the client owns. A slow listener delays the next
// listener calls, never ZooKeeper's receive loop, and no change is lost. It returns a
// function that unregisters fn. With WithCircuitBreaking, fn is behind a circuit breaker,
// as with AddCircuitBreakingListener.
func (c *Client) AddListener(fn func(State)) (remove func()) {
	if p := c.opts.circuitBreaking; p != nil && fn != nil {
		remove, _ = c.AddCircuitBreakingListener(p, fn)
		return remove
	}
	return c.addListener(fn)
}

// addListener registers fn as AddListener does, without a circuit breaker.
func (c *Client) addListener(fn func(State)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	c.lmu.Lock()
	l := &listener{fn: fn, from: c.queued + 1}
	c.listeners = append(c.listeners, l)
	c.lmu.Unlock()
	return func() {
		l.removed.Store(true)
		c.lmu.Lock()
		defer c.lmu.Unlock()
		for i, x := range c.listeners {
			if x == l {
				c.listeners = append(c.listeners[:i:i], c.listeners[i+1:]...)
				return
			}
		}
	}
}

func (c *Client) listenerLoop() {
	for {
		select {
		case <-c.closing:
			return
		case <-c.stateSig:
		}
		for {
			c.lmu.Lock()
			if len(c.stateQ) == 0 {
				c.lmu.Unlock()
				break
			}
			q := c.stateQ[0]
			c.stateQ = c.stateQ[1:]
			ls := append([]*listener(nil), c.listeners...)
			c.lmu.Unlock()
			for _, l := range ls {
				if !l.removed.Load() && q.seq >= l.from {
					c.callListener(l, q.s)
				}
			}
		}
	}
}

func (c *Client) callListener(l *listener, s State) {
	defer LogPanic(c.opts.logger, "state listener panicked", "component", "framework", "state", s.String())
	l.fn(s)
}

// BlockUntilConnected waits until the client is connected, ctx ends or the client is
// closed.
func (c *Client) BlockUntilConnected(ctx context.Context) error {
	var authed chan struct{}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		if !c.started {
			c.mu.Unlock()
			return ErrNotStarted
		}
		if c.connected {
			authed = c.authed // replaced with the session after a simulated Lost
			c.mu.Unlock()
			break
		}
		ch := c.connectedCh
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("framework: waiting for a connection: %w", ctx.Err())
		case <-c.closing:
			return ErrClosed
		}
	}
	select {
	case <-authed:
	case <-ctx.Done():
		return fmt.Errorf("framework: waiting for authentication: %w", ctx.Err())
	case <-c.closing:
		return ErrClosed
	}
	select {
	case <-c.trackGate:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("framework: waiting for the ensemble's configuration: %w", ctx.Err())
	case <-c.closing:
		return ErrClosed
	}
}

// waitConnected waits up to the connection timeout for a connection; then it fails with
// ErrNotConnected, a connection loss the retry policy may retry.
func (c *Client) waitConnected(ctx context.Context) error {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ErrClosed
	case !c.started:
		c.mu.Unlock()
		return ErrNotStarted
	case c.connected && isClosed(c.authed) && isClosed(c.trackGate):
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, c.opts.connectionTimeout)
	defer cancel()
	err := c.BlockUntilConnected(tctx)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		return ErrNotConnected
	}
	return err
}

// State returns the last connection state reported (0 before the first connection).
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SessionID returns the id of the session the client holds or last held.
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// Generation returns the session generation as recipes see it: it starts at 1 and
// changes on every Lost (real or simulated) and every new session. What a recipe holds
// in one generation is gone, or must be treated as gone, in the next.
func (c *Client) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Session returns the generation and session id together, consistently.
func (c *Client) Session() (gen uint64, sessionID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.sessionID
}

// LossSignal returns a channel that is closed when what a recipe holds in generation gen
// (a lock lease, leadership) may be lost, by the client's ErrorPolicy: on Suspended or
// Lost (standard) or only on Lost (session), when the generation changes, and on Close.
// It is closed already when gen is not the current generation or the policy's condition
// holds now.
func (c *Client) LossSignal(gen uint64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || gen != c.gen || c.lost || (!c.connected && c.opts.errorPolicy == StandardErrorPolicy) {
		return closedCh
	}
	return c.lossCh
}

// NegotiatedSessionTimeout returns the session timeout the server granted (the requested
// one before the first connection).
func (c *Client) NegotiatedSessionTimeout() time.Duration {
	return time.Duration(c.negotiated.Load())
}

// ErrorPolicy returns the client's connection-state error policy.
func (c *Client) ErrorPolicy() ErrorPolicy { return c.opts.errorPolicy }

// Namespace returns the client's namespace ("" for none).
func (c *Client) Namespace() string { return c.opts.namespace }

// Logger returns the client's logger, for recipes built on it.
func (c *Client) Logger() *slog.Logger { return c.opts.logger }

// UsesContainers reports whether parents made with WithContainerParents are container nodes.
func (c *Client) UsesContainers() bool { return c.opts.containers }

// Requests returns how many requests the client has sent to ZooKeeper (but the ensemble
// tracker's reads of /zookeeper/config: see WithEnsembleTracking).
func (c *Client) Requests() uint64 { return c.requests.Load() }

func (c *Client) countRequest(op string) {
	c.requests.Add(1)
	if h := c.opts.requestHook; h != nil {
		h(op)
	}
}

// Done returns a channel closed when the client is closed.
func (c *Client) Done() <-chan struct{} { return c.closing }

// Close closes the session and waits for the client's goroutines. Pending guaranteed
// deletes are abandoned (the server removes ephemeral nodes with the session). It may be
// called more than once, and from a state listener or a function given to Go: there it
// waits for everything but its own goroutine (a Close from elsewhere waits for that too).
func (c *Client) Close() error {
	c.mu.Lock()
	first := !c.closed
	if first {
		c.closed = true
		closeOnce(c.lossCh)
		if c.expiryTimer != nil {
			c.expiryTimer.Stop()
		}
		close(c.closing)
	}
	c.mu.Unlock()
	if first {
		// The watches first: they end with ErrClosed, before go-zookeeper's close ends
		// them with its own ErrClosing (a watch fires once).
		c.watches.closeAll()
		if conn := c.loadConn(); conn != nil {
			conn.Close()
		}
	}
	c.wg.Wait()
	c.cbs.wait()
	return nil
}

// RetryPolicy returns the client's retry policy, for recipes that retry whole steps.
func (c *Client) RetryPolicy() retry.Policy { return c.opts.retryPolicy }
