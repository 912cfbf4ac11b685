package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ZooKeeper opcodes of the requests that create a node.
const (
	opCreate          = 1
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

// maxFrame bounds a frame the proxy accepts (ZooKeeper's jute.maxbuffer is about 1 MiB).
const maxFrame = 16 << 20

// Proxy is a TCP proxy between clients and ZooKeeper servers that injects network faults:
// it closes connections, stalls all traffic (a partition or a hung server: the client sees
// only silence; long enough and the server expires the session), refuses new connections
// (a server whose process is gone), and loses the reply to a create (the request is
// applied, the client never hears of it). It listens on one loopback port per
// server. Its methods are safe for concurrent use.
//
// Stall is the call that cuts a client off: connect the client to ConnectString and
// the client and the server hear nothing from each other until Heal. To end the
// client's session at once instead, without a proxy, use Server.ExpireSession.
type Proxy struct {
	targets   []string
	listeners []net.Listener
	byTarget  map[string]string // server address -> proxy address
	targetOf  map[string]string // server address, as given or resolved -> target as given
	raw       bool              // carries bytes as they come, not ZooKeeper client frames
	chroot    string            // the chroot of the connect string it was started for, kept by ConnectString

	mu         sync.Mutex
	cond       *sync.Cond
	stalled    bool
	stallUp    bool // client -> server bytes held
	stallDown  bool // server -> client bytes held
	refusing   bool
	refused    map[string]bool // targets refused alone (Refuse with targets)
	stallTimer *time.Timer
	dropCreate int // replies to the next dropCreate creates are lost
	accepted   int // connections passed on to a server
	forwarded  int // client requests passed on to a server (not handshakes, pings or watch resets)
	links      map[*link]struct{}
	rewrite    map[string]string // target -> election address announced on its connections
	closed     bool
	wg         sync.WaitGroup
}

// StartProxy starts a proxy in front of the given servers (host:port each). Close it when
// done.
func StartProxy(targets ...string) (*Proxy, error) {
	return startProxy(false, targets...)
}

// startProxy starts a proxy; a raw one carries any TCP stream (ZooKeeper's quorum and
// election traffic is not made of length-prefixed frames), so DropNextCreateReply does
// nothing on it.
func startProxy(raw bool, targets ...string) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, errors.New("zktest: proxy needs at least one target")
	}
	p := &Proxy{byTarget: map[string]string{}, targetOf: map[string]string{}, refused: map[string]bool{},
		links: map[*link]struct{}{}, raw: raw}
	p.cond = sync.NewCond(&p.mu)
	for _, t := range targets {
		t = strings.TrimSpace(t)
		addrs, err := resolve(t)
		if err != nil {
			p.Close()
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			return nil, err
		}
		p.targets = append(p.targets, t)
		p.listeners = append(p.listeners, ln)
		for _, a := range append([]string{t}, addrs...) {
			if prev, ok := p.byTarget[a]; ok && prev != ln.Addr().String() {
				p.Close()
				return nil, fmt.Errorf("zktest: proxy targets overlap: %s is given twice (as %s)", t, a)
			}
			p.byTarget[a] = ln.Addr().String()
			p.targetOf[a] = t
		}
	}
	for i, ln := range p.listeners {
		p.wg.Add(1)
		go p.accept(ln, p.targets[i])
	}
	return p, nil
}

// StartProxyFor starts a proxy in front of the servers of a client's connect string
// (host:port[,host:port...][/chroot]); its ConnectString keeps the chroot. Close it when
// done. It is the entry point for a program that has no testing.T; NewProxy is the same
// for a test.
func StartProxyFor(connect string) (*Proxy, error) {
	hosts, chroot := connect, ""
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
	}
	p, err := StartProxy(strings.Split(hosts, ",")...)
	if err != nil {
		return nil, err
	}
	p.chroot = chroot
	return p, nil
}

// NewProxy starts a proxy in front of the servers of a connect string (StartProxyFor),
// closed at the test's cleanup.
func NewProxy(t testing.TB, connect string) *Proxy {
	t.Helper()
	p, err := StartProxyFor(connect)
	if err != nil {
		t.Fatalf("zktest: start proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// ConnectString returns the proxy's addresses, comma-separated, in the order of the
// targets, followed by the chroot of the connect string given to StartProxyFor or
// NewProxy, if any: a client given this connect string goes through the proxy.
func (p *Proxy) ConnectString() string {
	var addrs []string
	for _, ln := range p.listeners {
		addrs = append(addrs, ln.Addr().String())
	}
	return strings.Join(addrs, ",") + p.chroot
}

// resolve returns the addresses a client may dial for target (host:port): go-zookeeper
// resolves a host name before it dials, so a dialer sees 127.0.0.1:2181 for
// localhost:2181.
func resolve(target string) ([]string, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("zktest: proxy target %q: %w", target, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("zktest: proxy target %q: %w", target, err)
	}
	var addrs []string
	for _, ip := range ips {
		addrs = append(addrs, net.JoinHostPort(ip, port))
	}
	return addrs, nil
}

// Dialer returns a dialer for go-zookeeper's WithDialer (and the framework's dialer
// option): a client that dials a target server, by the address given to the proxy or by
// one its host name resolves to, reaches it through the proxy. Dialling any other address
// fails with an error, so that no client bypasses the proxy unnoticed.
func (p *Proxy) Dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		a, ok := p.byTarget[address]
		if !ok {
			return nil, fmt.Errorf("zktest: the proxy does not front %s (it fronts %s)", address, strings.Join(p.targets, ","))
		}
		p.mu.Lock()
		refusing := p.refusing || p.refused[p.targetOf[address]]
		p.mu.Unlock()
		if refusing {
			return nil, fmt.Errorf("zktest: dial %s: %w", address, syscall.ECONNREFUSED)
		}
		return net.DialTimeout(network, a, timeout)
	}
}

// Accepted returns how many client connections the proxy has passed on to its servers
// so far (not those it refused): a test waits on it to know that a client has come to a
// server.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// DropConnections closes every connection through the proxy now, in both directions.
// New connections are accepted as usual (unless refused).
func (p *Proxy) DropConnections() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Stall stops all traffic through the proxy, on existing and new connections, until
// Heal. Bytes sent meanwhile are held and delivered after Heal, like TCP after a
// partition; a side that closes meanwhile is seen as closed only after Heal. New
// connections are still accepted, as a hung server's kernel accepts them: a client waits
// for an answer that does not come. Refuse is the other shape of outage.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	if p.stallTimer != nil {
		p.stallTimer.Stop()
		p.stallTimer = nil
	}
	p.mu.Unlock()
}

// Refuse makes the proxy refuse new connections until Heal, like a host whose server
// process is gone: a dial through Dialer fails at once with an error wrapping
// syscall.ECONNREFUSED, and a connection made to the proxy's own address is reset at once,
// before the server hears of it. Given targets (server addresses as given to the proxy),
// it refuses connections to those servers only, and others go through: with
// DropConnections, a client must come back through a server not refused (a target the
// proxy does not front refuses nothing). Connections
// already open are left as they are; with DropConnections as well, it is a server that
// died.
func (p *Proxy) Refuse(targets ...string) {
	p.mu.Lock()
	if len(targets) == 0 {
		p.refusing = true
	}
	for _, t := range targets {
		p.refused[strings.TrimSpace(t)] = true
	}
	p.mu.Unlock()
}

// StallToServers holds, until Heal, the bytes that clients send through the proxy, on
// existing and new connections, while the servers' bytes still reach the clients: one
// direction of a partition. At TCP level this is all a proxy can do: each side's kernel still
// acknowledges the other's segments (the proxy terminates both connections), so a sender
// learns of the cut only from the silence of the other side's application, never from
// TCP. On a proxy that carries ensemble peer traffic (see WithPeerProxies), new
// connections are reset at once while this lasts, rather than left open in silence, so
// that no member's listener waits on a connection that says nothing.
func (p *Proxy) StallToServers() {
	p.mu.Lock()
	p.stallUp = true
	p.mu.Unlock()
}

// StallToClients holds, until Heal, the bytes that the servers send back through the
// proxy, while the clients' bytes still reach the servers: the other direction of
// StallToServers, with the same TCP-level meaning.
func (p *Proxy) StallToClients() {
	p.mu.Lock()
	p.stallDown = true
	p.mu.Unlock()
}

// StallFor stalls the proxy for d, then heals it.
func (p *Proxy) StallFor(d time.Duration) {
	p.Stall()
	p.mu.Lock()
	p.stallTimer = time.AfterFunc(d, p.Heal)
	p.mu.Unlock()
}

// HoldReplies holds every reply (and watch event) from the servers until Heal, while the
// clients' requests still reach them: a request sent meanwhile is applied, and its
// client waits for an answer — a request held in flight after the server acted on it.
// Bytes held are delivered after Heal; a client that hears nothing for long enough
// closes its connection, as it would with a hung server.
func (p *Proxy) HoldReplies() { p.StallToClients() }

// Forwarded returns how many client requests the proxy has passed on to the servers so
// far, not counting session handshakes, pings and the re-arming of watches (requests with
// a negative xid): a test waits on it to know that a request reached a server.
func (p *Proxy) Forwarded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded
}

// Heal ends a stall (of both directions or of one), a hold of replies and a refusal.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.stalled = false
	p.stallUp = false
	p.stallDown = false
	p.refusing = false
	clear(p.refused)
	if p.stallTimer != nil {
		p.stallTimer.Stop()
		p.stallTimer = nil
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// DropNextCreateReply makes the proxy lose the server's reply to the next create request
// (create, create2, container or TTL) that passes through it: the server applies it, the
// proxy then closes that client connection, and the client sees a connection loss — the
// "ghost node" case that protected creation exists for.
func (p *Proxy) DropNextCreateReply() {
	p.mu.Lock()
	p.dropCreate++
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection through it. It may be called more
// than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.stalled = false
	p.stallUp = false
	p.stallDown = false
	if p.stallTimer != nil {
		p.stallTimer.Stop()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, ln := range p.listeners {
		ln.Close()
	}
	p.DropConnections()
	p.wg.Wait()
	return nil
}

func (p *Proxy) accept(ln net.Listener, target string) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing || p.refused[target] || (p.raw && (p.stalled || p.stallUp))
		p.mu.Unlock()
		if refusing {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with a reset, as a port nobody listens on answers
			}
			c.Close()
			continue
		}
		if !p.raw {
			p.open(c, target)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.open(c, target)
		}()
	}
}

// peerDialFor is how long a raw (peer) proxy keeps trying to reach a member that refuses
// the connection. A learner that connects to its new leader a moment before the leader
// listens is refused and tries again; through a proxy it is accepted, so the proxy must
// do the trying: were it to close the accepted connection, the learner would see its
// leader hang up and start an election anew, while the leader waits initLimit (10 s here)
// for followers that no longer come.
const peerDialFor = 3 * time.Second

// open dials target for the accepted connection c and carries bytes between them.
func (p *Proxy) open(c net.Conn, target string) {
	s, err := net.DialTimeout("tcp", target, 5*time.Second)
	for deadline := time.Now().Add(peerDialFor); err != nil && p.raw && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		p.mu.Lock()
		gone := p.closed || p.refusing || p.refused[target] || p.stalled || p.stallUp
		p.mu.Unlock()
		if gone {
			break
		}
		s, err = net.DialTimeout("tcp", target, 5*time.Second)
	}
	if err != nil {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // as the refused port would answer
		}
		c.Close()
		return
	}
	l := &link{p: p, client: c, server: s, dropXids: map[int32]bool{}}
	p.mu.Lock()
	l.announce = p.rewrite[target]
	if p.closed {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.links[l] = struct{}{}
	p.accepted++
	p.mu.Unlock()
	up := &pipe{l: l, src: c, dst: s, up: true}
	down := &pipe{l: l, src: s, dst: c}
	p.wg.Add(4)
	go up.read()
	go up.write()
	go down.read()
	go down.write()
}

// link is one client connection and its server connection.
type link struct {
	p              *Proxy
	client, server net.Conn
	once           sync.Once
	dropXids       map[int32]bool // guarded by p.mu
	announce       string         // the election address to announce instead of the sender's (set before the pipes start)
}

func (l *link) close() {
	l.once.Do(func() {
		l.client.Close()
		l.server.Close()
		l.p.mu.Lock()
		delete(l.p.links, l)
		l.p.cond.Broadcast()
		l.p.mu.Unlock()
	})
}

// pipe carries whole frames in one direction. The reader queues frames; the writer sends
// them when the proxy is not stalled.
type pipe struct {
	l        *link
	src, dst net.Conn
	up       bool // client -> server

	// guarded by l.p.mu
	queue  [][]byte
	eof    bool
	frames int
}

func (pp *pipe) read() {
	p := pp.l.p
	defer p.wg.Done()
	if p.raw {
		pp.readRaw()
		return
	}
	hdr := make([]byte, 4)
	for {
		if _, err := io.ReadFull(pp.src, hdr); err != nil {
			break
		}
		n := binary.BigEndian.Uint32(hdr)
		if n > maxFrame {
			break
		}
		frame := make([]byte, 4+n)
		copy(frame, hdr)
		if _, err := io.ReadFull(pp.src, frame[4:]); err != nil {
			break
		}
		p.mu.Lock()
		pp.queue = append(pp.queue, frame)
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	p.mu.Lock()
	pp.eof = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// readRaw queues bytes as they come, for a raw proxy.
func (pp *pipe) readRaw() {
	p := pp.l.p
	if pp.up && pp.l.announce != "" {
		hello, err := rewriteElectionHello(pp.src, pp.l.announce)
		p.mu.Lock()
		pp.queue = append(pp.queue, hello)
		if err != nil {
			pp.eof = true
		}
		p.cond.Broadcast()
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := pp.src.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			p.mu.Lock()
			pp.queue = append(pp.queue, chunk)
			p.cond.Broadcast()
			p.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	p.mu.Lock()
	pp.eof = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// heldLocked reports whether this pipe's direction is stalled; p.mu must be held.
func (pp *pipe) heldLocked() bool {
	p := pp.l.p
	return p.stalled || (pp.up && p.stallUp) || (!pp.up && p.stallDown)
}

func (pp *pipe) write() {
	p := pp.l.p
	defer p.wg.Done()
	defer pp.l.close()
	for {
		p.mu.Lock()
		for !p.closed && (pp.heldLocked() || (len(pp.queue) == 0 && !pp.eof)) && pp.l.isOpenLocked() {
			p.cond.Wait()
		}
		if p.closed || !pp.l.isOpenLocked() || (len(pp.queue) == 0 && pp.eof) {
			p.mu.Unlock()
			return
		}
		frame := pp.queue[0]
		pp.queue = pp.queue[1:]
		first := pp.frames == 0
		pp.frames++
		drop := false
		if !p.raw && !first && len(frame) >= 12 {
			xid := int32(binary.BigEndian.Uint32(frame[4:8]))
			if pp.up {
				if xid > 0 {
					p.forwarded++
				}
				op := int32(binary.BigEndian.Uint32(frame[8:12]))
				if p.dropCreate > 0 && (op == opCreate || op == opCreate2 || op == opCreateContainer || op == opCreateTTL) {
					p.dropCreate--
					pp.l.dropXids[xid] = true
				}
			} else if pp.l.dropXids[xid] {
				drop = true
			}
		}
		p.mu.Unlock()
		if drop {
			return // the reply is lost with the connection (deferred close)
		}
		if _, err := pp.dst.Write(frame); err != nil {
			return
		}
	}
}

// isOpenLocked reports whether the link is still registered; p.mu must be held.
func (l *link) isOpenLocked() bool {
	_, ok := l.p.links[l]
	return ok
}

// String describes the proxy, for test logs.
func (p *Proxy) String() string {
	return fmt.Sprintf("zktest.Proxy(%s -> %s)", p.ConnectString(), strings.Join(p.targets, ","))
}
