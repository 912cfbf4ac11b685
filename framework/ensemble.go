package framework

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework/internal/wire"
)

// Ensemble tracking: the client follows the ensemble's dynamic configuration
// (ZooKeeper 3.5+'s /zookeeper/config), as Curator's EnsembleTracker does, so that it can
// still reach the ensemble after its members were replaced by reconfiguration.
//
// The tracker reads /zookeeper/config, without a watch, when a session starts (before
// Connect returns, for the first), at each reconnection, and every configPollInterval
// while connected. The first configuration it reads is trusted to match the connect
// string (which may name proxies, load balancers or other aliases of the members): the
// client keeps dialling the connect string's servers until it reads a newer version, a
// reconfiguration. Then it dials the servers the new configuration names, and those of
// every later one. It does not drop its connection to move: it stays on its server until
// that server goes, then connects to one of the new list.

// configPath is where ZooKeeper publishes its dynamic configuration. The tracker reads
// it as it is, never under the client's chroot or namespace.
const configPath = "/zookeeper/config"

// WithEnsembleTracking says whether the client follows the ensemble's configuration
// (/zookeeper/config): after a reconfiguration that adds or removes members, it dials the
// members of the new configuration instead of those of the connect string, so that it
// reaches the ensemble when every member it was given is gone. The first configuration
// read is taken to match the connect string (which may name proxies or aliases): only a
// configuration newer than that one changes the servers dialled. The chroot and the
// namespace are kept. A member whose configuration gives no client address is left out;
// one whose client address is the wildcard (0.0.0.0, [::]) is dialled at its quorum
// host, and observers are dialled too, as by Curator.
//
// The default is on, without WithTLS; with WithTLS it is off, since the configuration
// names only each member's plain client port, not its secure one: turn it on only when
// the members' client ports speak TLS too (ZooKeeper's client.portUnification=true);
// each member's certificate is then checked for the host the configuration names.
// Turn it off to pin the client to the connect string's servers. The tracker's reads
// are not counted by Requests nor shown to request hooks and observers; a failed read is
// logged and tried again.
//
// Unlike Curator's EnsembleTracker, the client sets no watch on /zookeeper/config: it
// reads it when a session starts, at each reconnection, and every 30 seconds while
// connected. A watch would expose, in every session of every client, go-zookeeper
// v1.0.4's data race on its last zxid (read for the set-watches request that starts a
// session's connection, written by its receive loop; upstream go-zookeeper/zk PR #35).
// So a reconfiguration is followed at the client's next reconnection or within 30
// seconds; a client whose every known member is removed within those 30 seconds,
// without a reconnection in between, is stranded, as it is without tracking.
func WithEnsembleTracking(on bool) Option {
	return check(func(o *options) error { o.tracking = &on; return nil })
}

// tracksEnsemble reports whether the client follows the ensemble's configuration.
func (o *options) tracksEnsemble() bool {
	if o.tracking != nil {
		return *o.tracking
	}
	return o.tls == nil
}

// ensembleConfig is what the client uses of a dynamic configuration.
type ensembleConfig struct {
	version uint64   // its "version=" line (a zxid, hexadecimal); 0 when it has none
	servers []string // the members' client addresses (host:port), sorted
}

// parseEnsembleConfig parses the data of /zookeeper/config: lines "server.N=..." and
// "version=...", others ignored. A server line is
//
//	host:quorumPort:electionPort[:role][|host:quorumPort:electionPort[:role]...][;[clientHost:]clientPort]
//
// with IPv6 hosts in brackets. A member without a client address is left out; a client
// host that is missing or the wildcard address is replaced by the member's (first)
// quorum host. A malformed line makes the whole configuration an error.
func parseEnsembleConfig(data []byte) (ensembleConfig, error) {
	var cfg ensembleConfig
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case key == "version":
			v, err := strconv.ParseUint(value, 16, 64)
			if err != nil {
				return ensembleConfig{}, fmt.Errorf("framework: ensemble configuration: bad version %q", value)
			}
			cfg.version = v
		case strings.HasPrefix(key, "server."):
			if _, err := strconv.ParseUint(key[len("server."):], 10, 64); err != nil {
				return ensembleConfig{}, fmt.Errorf("framework: ensemble configuration: bad server id in %q", line)
			}
			addr, err := parseServerLine(value)
			if err != nil {
				return ensembleConfig{}, fmt.Errorf("framework: ensemble configuration: %q: %w", line, err)
			}
			if addr != "" {
				cfg.servers = append(cfg.servers, addr)
			}
		}
	}
	slices.Sort(cfg.servers)
	cfg.servers = slices.Compact(cfg.servers)
	return cfg, nil
}

// parseServerLine returns the client address of a server line's value ("" when it has
// none).
func parseServerLine(value string) (string, error) {
	quorum, client, hasClient := strings.Cut(value, ";")
	first, _, _ := strings.Cut(quorum, "|")
	parts, err := splitHostPorts(strings.TrimSpace(first))
	if err != nil {
		return "", err
	}
	if len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return "", errors.New("want host:quorumPort:electionPort[:role]")
	}
	for _, p := range parts[1:3] {
		if err := checkPort(p); err != nil {
			return "", err
		}
	}
	if len(parts) == 4 && parts[3] != "participant" && parts[3] != "observer" {
		return "", fmt.Errorf("unknown role %q", parts[3])
	}
	quorumHost := parts[0]
	client = strings.TrimSpace(client)
	if !hasClient || client == "" {
		return "", nil // no client address: the member serves no clients (Curator skips it)
	}
	cparts, err := splitHostPorts(client)
	if err != nil {
		return "", err
	}
	var host, port string
	switch len(cparts) {
	case 1:
		port = cparts[0]
	case 2:
		host, port = cparts[0], cparts[1]
	default:
		return "", fmt.Errorf("bad client address %q", client)
	}
	if err := checkPort(port); err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = quorumHost
	}
	return net.JoinHostPort(host, port), nil
}

// splitHostPorts splits "host:a:b..." at its colons, the host possibly an IPv6 address
// in brackets (returned without them).
func splitHostPorts(s string) ([]string, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, fmt.Errorf("unclosed '[' in %q", s)
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return []string{host}, nil
		}
		if rest[0] != ':' {
			return nil, fmt.Errorf("want ':' after ']' in %q", s)
		}
		return append([]string{host}, strings.Split(rest[1:], ":")...), nil
	}
	return strings.Split(s, ":"), nil
}

func checkPort(p string) error {
	n, err := strconv.Atoi(strings.TrimSpace(p))
	if err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("bad port %q", p)
	}
	return nil
}

// hostList is the client's host provider (go-zookeeper's HostProvider): it hands out
// the servers in a random order, as go-zookeeper's own does, and its list can be
// replaced while the client runs (ensemble tracking). Without TLS it resolves each name
// to its addresses, as go-zookeeper's own does; with TLS it hands out the names as
// given, so that the dialer resolves them and each server's certificate is checked for
// its name.
type hostList struct {
	resolve bool
	partial bool // a member whose name does not resolve is left out (the tracked members)

	mu      sync.Mutex
	servers []string
	curr    int
	last    int
	wire    *wire.HostList // our own connection's list, which replace updates too (nil: go-zookeeper's)
}

// lookupTimeout bounds the resolution of the names of a server list (go-zookeeper's).
const lookupTimeout = 3 * time.Second

// resolveServers returns the addresses of servers (host:port each): every address of
// each name. A name that does not resolve is an error, unless partial: then it is left
// out, and only none resolving is an error.
func resolveServers(servers []string, partial bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var found []string
	var failed error
	for _, s := range servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, err
		}
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil && partial {
			failed = err
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			found = append(found, net.JoinHostPort(a, port))
		}
	}
	if len(found) == 0 && failed != nil {
		return nil, failed
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("framework: %w: no addresses for %q", ErrInvalidArgument, servers)
	}
	return found, nil
}

func (h *hostList) Init(servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("framework: %w: no servers", ErrInvalidArgument)
	}
	list := slices.Clone(servers)
	if h.resolve {
		var err error
		if list, err = resolveServers(servers, h.partial); err != nil {
			return err
		}
	}
	h.replace(list)
	return nil
}

// replace makes servers the list handed out from now on, in a random order. The
// current connection is kept: the next server is taken from the new list when it goes.
func (h *hostList) replace(servers []string) {
	list := slices.Clone(servers)
	rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = list
	h.curr, h.last = -1, -1
	if h.wire != nil {
		_ = h.wire.Update(list) // not empty: Init and the tracker give none that is
	}
}

// list returns the servers, sorted.
func (h *hostList) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := slices.Clone(h.servers)
	slices.Sort(l)
	return l
}

func (h *hostList) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *hostList) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *hostList) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

// ensembleState is what the tracker knows. Its mutex is taken alone.
type ensembleState struct {
	connected chan struct{} // signalled (buffer 1) at each (re)connection; nil without tracking
	reads     atomic.Uint64 // configuration reads answered (tests watch it)

	mu      sync.Mutex
	seen    bool     // a configuration was read
	version uint64   // the newest configuration's version
	servers []string // the servers it names, once one replaced the connect string's; nil before
	hosts   *hostList
}

// newHostList makes the host provider of a new connection and the servers to give it.
func (c *Client) newHostList() (*hostList, []string) {
	c.ens.mu.Lock()
	defer c.ens.mu.Unlock()
	servers := c.servers
	if c.ens.servers != nil {
		servers = c.ens.servers
	}
	return &hostList{resolve: c.opts.tls == nil, partial: c.ens.servers != nil}, slices.Clone(servers)
}

// useHostList makes h the host provider the tracker updates; servers is the list it
// was given, which a configuration read meanwhile may have replaced.
func (c *Client) useHostList(h *hostList, servers []string) {
	c.ens.mu.Lock()
	defer c.ens.mu.Unlock()
	c.ens.hosts = h
	if c.ens.servers != nil && !slices.Equal(servers, c.ens.servers) {
		list := c.ens.servers
		if h.resolve {
			resolved, err := resolveServers(list, true)
			if err != nil {
				return // none resolves now: the list Init made stays
			}
			list = resolved
		}
		h.replace(list)
	}
}

// Servers returns the servers the client dials now, sorted: those of the connect string
// (resolved to addresses, without TLS) until ensemble tracking replaced them with the
// members of a new configuration (see WithEnsembleTracking).
func (c *Client) Servers() []string {
	c.ens.mu.Lock()
	h := c.ens.hosts
	c.ens.mu.Unlock()
	if h == nil {
		l := slices.Clone(c.servers)
		slices.Sort(l)
		return l
	}
	return h.list()
}

// ConnectedServer returns the server (host:port, as dialled) of the client's current
// connection, or "" when it is not connected.
func (c *Client) ConnectedServer() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn := c.loadConn()
	if !c.connected || conn == nil {
		return ""
	}
	return conn.Server()
}

// configPollInterval is how often the tracker reads the configuration while the
// client stays connected (it reads it too on each new session and each reconnection).
// A reconfiguration is an operator's rare act, and a client follows it within this
// interval; one small read per client per half minute is little next to the pings that
// keep its session. Tests shorten it with withConfigPoll.
const configPollInterval = 30 * time.Second

// withConfigPoll sets the tracker's poll interval (tests only; 0: configPollInterval).
func withConfigPoll(d time.Duration) Option {
	return check(func(o *options) error { o.configPoll = d; return nil })
}

// trackEnsemble is the tracker's goroutine: it reads /zookeeper/config, without a watch,
// once connected, again at each (re)connection (a new session or a reconnection of the
// session, which setConnectedLocked signals on ens.connected), and every poll interval
// while connected, until the client closes. Its first read on the client's first session
// opens trackGate, whatever its outcome.
//
// It sets no watch on purpose: go-zookeeper v1.0.4 reads its last zxid for the
// set-watches request it sends at the start of a session's connection (only when it
// holds a watch) while its receive loop writes it for every reply, unlocked (a data
// race, fixed by upstream go-zookeeper/zk PR #35). The dialer's gate orders them on a
// reconnection of a session, but nothing observable does on a new session: a watch set
// first thing in every session by every client would make that race frequent.
func (c *Client) trackEnsemble() {
	defer c.wg.Done()
	gateOpen := false
	openGate := func() {
		if !gateOpen {
			close(c.trackGate)
			gateOpen = true
		}
	}
	defer openGate()
	poll := c.opts.configPoll
	if poll <= 0 {
		poll = configPollInterval
	}
	const minWait = 100 * time.Millisecond
	maxWait := min(10*time.Second, poll)
	wait := minWait
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		conn, ok := c.waitConnection()
		if !ok {
			return
		}
		// A (re)connection signalled before this read is covered by it; one after it
		// makes the next.
		select {
		case <-c.ens.connected:
		default:
		}
		data, err := c.readConfig(conn)
		openGate()
		next := poll
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			c.opts.logger.Debug("reading the ensemble's configuration failed", "component", "framework",
				"path", configPath, "err", err)
			next = wait
			if errors.Is(err, zk.ErrNoNode) {
				next = poll // a server before ZooKeeper 3.5: nothing to track
			}
			wait = min(2*wait, maxWait)
		} else {
			wait = minWait
			c.ens.reads.Add(1)
			c.applyConfig(data)
		}
		timer.Reset(next)
		select {
		case <-timer.C:
		case <-c.ens.connected:
		case <-c.closing:
			return
		}
	}
}

// waitConnection waits until the client is connected and returns its connection; false
// once the client is closed.
func (c *Client) waitConnection() (zkConn, bool) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, false
		}
		if c.connected {
			conn := c.loadConn()
			c.mu.Unlock()
			return conn, true
		}
		ch := c.connectedCh
		c.mu.Unlock()
		select {
		case <-ch:
		case <-c.closing:
			return nil, false
		}
	}
}

// readConfig reads /zookeeper/config on conn, without a watch, bypassing request
// counting, hooks and observers.
func (c *Client) readConfig(conn zkConn) ([]byte, error) {
	return c.configRequest(func() ([]byte, error) { d, _, err := conn.Get(configPath); return d, err })
}

// configRequest runs req on a goroutine Close waits for and returns its outcome, or
// ErrClosed once the client closes.
func (c *Client) configRequest(req func() ([]byte, error)) ([]byte, error) {
	if !c.track() {
		return nil, ErrClosed
	}
	type res struct {
		data []byte
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		defer c.wg.Done()
		d, err := req()
		ch <- res{d, err}
	}()
	select {
	case r := <-ch:
		return r.data, r.err
	case <-c.closing:
		return nil, ErrClosed
	}
}

// applyConfig takes in a configuration read: the first is the baseline; a newer one
// replaces the servers the client dials.
func (c *Client) applyConfig(data []byte) {
	cfg, err := parseEnsembleConfig(data)
	if err != nil {
		c.opts.logger.Warn("ignoring the ensemble's configuration", "component", "framework", "err", err)
		return
	}
	c.ens.mu.Lock()
	if !c.ens.seen {
		c.ens.seen, c.ens.version = true, cfg.version
		c.ens.mu.Unlock()
		c.opts.logger.Debug("ensemble configuration", "component", "framework",
			"version", fmt.Sprintf("%x", cfg.version), "servers", cfg.servers)
		return
	}
	if cfg.version <= c.ens.version {
		c.ens.mu.Unlock()
		return // the same, or older (read from a server that lags)
	}
	if len(cfg.servers) == 0 {
		c.ens.version = cfg.version
		c.ens.mu.Unlock()
		c.opts.logger.Warn("the ensemble's new configuration names no client address; keeping the servers",
			"component", "framework", "version", fmt.Sprintf("%x", cfg.version))
		return
	}
	c.ens.mu.Unlock()
	// The members are kept by name (each new session resolves them again, as go-zookeeper
	// resolves a connect string's); the running host list gets the addresses of those that
	// resolve now. None resolving leaves the version unseen: the next read tries again.
	servers := cfg.servers
	if c.opts.tls == nil {
		if servers, err = resolveServers(cfg.servers, true); err != nil {
			c.opts.logger.Warn("none of the ensemble's new members resolves; keeping the servers until the next read",
				"component", "framework", "servers", cfg.servers, "err", err)
			return
		}
	}
	c.ens.mu.Lock()
	if cfg.version <= c.ens.version { // a newer one came meanwhile: it decides
		c.ens.mu.Unlock()
		return
	}
	c.ens.version = cfg.version
	c.ens.servers = slices.Clone(cfg.servers)
	h := c.ens.hosts
	if h != nil {
		h.replace(servers)
	}
	c.ens.mu.Unlock()
	c.opts.logger.Info("the ensemble changed; dialling its new members", "component", "framework",
		"version", fmt.Sprintf("%x", cfg.version), "servers", cfg.servers)
}
