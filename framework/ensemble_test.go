package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestParseEnsembleConfig(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		version uint64
		servers []string
		wantErr bool
	}{
		{
			name: "participants, as ZooKeeper 3.8 writes them",
			data: "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
				"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n" +
				"version=100000000\n",
			version: 0x100000000,
			servers: []string{"127.0.0.1:2181", "127.0.0.1:2182"},
		},
		{
			name: "observers are dialled too, as by Curator",
			data: "server.1=a.example:2888:3888:participant;a.example:2181\n" +
				"server.4=d.example:2888:3888:observer;d.example:2181\nversion=2",
			version: 2,
			servers: []string{"a.example:2181", "d.example:2181"},
		},
		{
			name: "the wildcard client address and a bare port mean the quorum host",
			data: "server.1=zk1.example:2888:3888:participant;0.0.0.0:2181\n" +
				"server.2=zk2.example:2888:3888;[::]:2182\n" +
				"server.3=zk3.example:2888:3888:participant;2183\nversion=a",
			version: 10,
			servers: []string{"zk1.example:2181", "zk2.example:2182", "zk3.example:2183"},
		},
		{
			name: "IPv6 quorum and client hosts",
			data: "server.1=[2001:db8::1]:2888:3888:participant;[2001:db8::1]:2181\n" +
				"server.2=[2001:db8::2]:2888:3888:participant;[::]:2181\nversion=5",
			version: 5,
			servers: []string{"[2001:db8::1]:2181", "[2001:db8::2]:2181"},
		},
		{
			name: "a member without a client address is left out",
			data: "server.1=h1:2888:3888:participant;h1:2181\nserver.2=h2:2888:3888:participant\n" +
				"server.3=h3:2888:3888:participant;\nversion=3",
			version: 3,
			servers: []string{"h1:2181"},
		},
		{
			name:    "several quorum addresses: the first is the host",
			data:    "server.1=h1:2888:3888|h1b:2889:3889;0.0.0.0:2181\nversion=1",
			version: 1,
			servers: []string{"h1:2181"},
		},
		{
			name:    "a standalone server's empty configuration",
			data:    "",
			servers: nil,
		},
		{name: "bad version", data: "version=xyz", wantErr: true},
		{name: "bad server id", data: "server.x=h:1:2;h:3", wantErr: true},
		{name: "missing election port", data: "server.1=h:2888;h:2181", wantErr: true},
		{name: "bad client port", data: "server.1=h:2888:3888;h:99999", wantErr: true},
		{name: "unknown role", data: "server.1=h:2888:3888:voter;h:2181", wantErr: true},
		{name: "unclosed bracket", data: "server.1=[::1:2888:3888;2181", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseEnsembleConfig([]byte(tt.data))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error; got %+v", cfg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.version != tt.version {
				t.Errorf("version %x, want %x", cfg.version, tt.version)
			}
			if len(cfg.servers) != len(tt.servers) {
				t.Fatalf("servers %q, want %q", cfg.servers, tt.servers)
			}
			for i := range tt.servers {
				if cfg.servers[i] != tt.servers[i] {
					t.Fatalf("servers %q, want %q", cfg.servers, tt.servers)
				}
			}
		})
	}
}

// A replaced host list is handed out from its start, and every server in it once per
// pass.
func TestHostListReplace(t *testing.T) {
	h := &hostList{}
	if err := h.Init([]string{"a:1", "b:2"}); err != nil {
		t.Fatal(err)
	}
	h.Next()
	h.Connected()
	h.replace([]string{"c:3", "d:4", "e:5"})
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		s, retryStart := h.Next()
		if retryStart {
			t.Fatalf("retryStart on the %d. server of a new list", i+1)
		}
		seen[s] = true
	}
	if len(seen) != 3 || !seen["c:3"] || !seen["d:4"] || !seen["e:5"] {
		t.Fatalf("handed out %v", seen)
	}
	if _, retryStart := h.Next(); !retryStart {
		t.Fatal("no retryStart after a whole pass")
	}
}

// Tracking is on by default, off with TLS (the configuration names no secure port)
// unless asked for, and off when the user pins the servers.
func TestEnsembleTrackingDefault(t *testing.T) {
	tlsCfg := &tls.Config{}
	for _, tt := range []struct {
		opts []Option
		want bool
	}{
		{nil, true},
		{[]Option{WithEnsembleTracking(false)}, false},
		{[]Option{WithTLS(tlsCfg)}, false},
		{[]Option{WithTLS(tlsCfg), WithEnsembleTracking(true)}, true},
	} {
		c, err := New("127.0.0.1:2181", tt.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.opts.tracksEnsemble(); got != tt.want {
			t.Errorf("%d options: tracking %v, want %v", len(tt.opts), got, tt.want)
		}
	}
}

// configWatches counts the watches on /zookeeper/config the server lists (wchc).
func configWatches(t *testing.T, addr string) int {
	t.Helper()
	out, err := zktest.FourLetterWord(addr, "wchc", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == configPath {
			n++
		}
	}
	return n
}

// noConfigWatch fails the test if the server lists a watch on /zookeeper/config.
func noConfigWatch(t *testing.T, addr, when string) {
	t.Helper()
	if n := configWatches(t, addr); n != 0 {
		t.Fatalf("%s: %d watches on %s, want none", when, n, configPath)
	}
}

// The tracker reads the configuration, with no watch, before Connect returns, again at a
// reconnection of the session and at a new session after expiry (its poll interval is
// an hour here: those reads are not the poll's), with no request counted and no watch
// set; the first configuration does not replace the connect string's servers (here a
// proxy's).
func TestEnsembleTrackerReads(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Connect(ctx, proxy.ConnectString(), WithNamespace("ns"), WithSessionTimeout(1500*time.Millisecond),
		withConfigPoll(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := c.ens.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the configuration when Connect returned, want 1", n)
	}
	noConfigWatch(t, srv.Addr(), "when Connect returned")
	if c.Requests() != 0 || c.Watches() != 0 {
		t.Fatalf("Requests %d, Watches %d: the tracker's read counted", c.Requests(), c.Watches())
	}
	want, err := resolveServers(strings.Split(proxy.ConnectString(), ","), false)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if got := c.Servers(); !slices.Equal(got, want) {
		t.Fatalf("Servers %v, want the proxy's %v", got, want)
	}

	// A reconnection of the session.
	sid := c.SessionID()
	proxy.DropConnections()
	waitFor(t, "a read at the reconnection", func() bool { return c.ens.reads.Load() >= 2 })
	if c.SessionID() != sid {
		t.Fatalf("session 0x%x after the reconnection, want 0x%x", c.SessionID(), sid)
	}
	noConfigWatch(t, srv.Addr(), "after the reconnection")

	// A new session after the old one expired.
	proxy.Stall()
	waitFor(t, "the session's expiry on the server", func() bool {
		out, err := zktest.FourLetterWord(srv.Addr(), "cons", 5*time.Second)
		return err == nil && !strings.Contains(out, fmt.Sprintf("sid=0x%x", sid))
	})
	reads := c.ens.reads.Load()
	proxy.Heal()
	waitFor(t, "a new session", func() bool { return c.SessionID() != sid && c.ConnectedServer() != "" })
	waitFor(t, "a read on the new session", func() bool { return c.ens.reads.Load() > reads })
	noConfigWatch(t, srv.Addr(), "after the new session")
	if c.Requests() != 0 || c.Watches() != 0 {
		t.Fatalf("Requests %d, Watches %d after the new session", c.Requests(), c.Watches())
	}
	if got := c.Servers(); !slices.Equal(got, want) {
		t.Fatalf("Servers %v after a new session, want the proxy's %v", got, want)
	}
}

// While connected the tracker reads the configuration every poll interval, with no
// state change in between and no watch set; Close stops it (leakcheck: no goroutine
// left).
func TestEnsembleTrackerPolls(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(srv.ConnectString(), withConfigPoll(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	states := make(chan State, 16)
	c.AddListener(func(s State) {
		select {
		case states <- s:
		default:
		}
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	first := c.ens.reads.Load()
	waitFor(t, "three more reads", func() bool { return c.ens.reads.Load() >= first+3 })
	noConfigWatch(t, srv.Addr(), "while polling")
	if c.Requests() != 0 || c.Watches() != 0 {
		t.Fatalf("Requests %d, Watches %d: the tracker's reads counted", c.Requests(), c.Watches())
	}
	c.Close()
	close(states)
	for s := range states {
		if s != Connected {
			t.Fatalf("state %v while polling: the reads were not all on one connection", s)
		}
	}
}

// Only a configuration newer than the first one read replaces the servers dialled: the
// same version, or an older one (from a server that lags), does not.
func TestEnsembleTrackerNewerOnly(t *testing.T) {
	c, err := New("127.0.0.1:2181")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostList{resolve: true}
	if err := h.Init([]string{"127.0.0.1:2181"}); err != nil {
		t.Fatal(err)
	}
	c.useHostList(h, []string{"127.0.0.1:2181"})
	cfg := func(version string, ports ...int) []byte {
		var b strings.Builder
		for i, p := range ports {
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d:participant;127.0.0.1:%d\n", i+1, 3000+i, 4000+i, p)
		}
		return []byte(b.String() + "version=" + version + "\n")
	}
	check := func(when string, want ...string) {
		t.Helper()
		if got := c.Servers(); !slices.Equal(got, want) {
			t.Fatalf("%s: Servers %v, want %v", when, got, want)
		}
	}
	c.applyConfig(cfg("10", 2182, 2183)) // the baseline: taken to match the connect string
	check("after the first configuration", "127.0.0.1:2181")
	c.applyConfig(cfg("10", 2184))
	check("after the same version", "127.0.0.1:2181")
	c.applyConfig(cfg("f", 2184))
	check("after an older version", "127.0.0.1:2181")
	c.applyConfig(cfg("11", 2185, 2186))
	check("after a newer version", "127.0.0.1:2185", "127.0.0.1:2186")
	c.applyConfig(cfg("10", 2184))
	check("after an older version again", "127.0.0.1:2185", "127.0.0.1:2186")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

// A new configuration naming a member whose name does not resolve (yet: a Kubernetes
// pod whose DNS record is not published, a typo in one server line) still moves the
// client to the members that do: ZooKeeper's own client resolves each server when it
// dials it. Ignoring the whole configuration keeps the client on servers the
// reconfiguration removed, and the version is then taken as seen, so it is never retried.
func TestEnsembleTrackerUnresolvableMember(t *testing.T) {
	c, err := New("127.0.0.1:2181")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostList{resolve: true}
	if err := h.Init([]string{"127.0.0.1:2181"}); err != nil {
		t.Fatal(err)
	}
	c.useHostList(h, []string{"127.0.0.1:2181"})
	c.applyConfig([]byte("server.1=127.0.0.1:3000:4000:participant;127.0.0.1:2181\nversion=10\n"))
	c.applyConfig([]byte("server.2=127.0.0.1:3001:4001:participant;127.0.0.1:2185\n" +
		"server.3=zk3.nosuch.invalid:3002:4002:participant;zk3.nosuch.invalid:2186\nversion=11\n"))
	if got := c.Servers(); !slices.Contains(got, "127.0.0.1:2185") {
		t.Fatalf("Servers %v after a reconfiguration to 127.0.0.1:2185 and an unresolvable member: "+
			"the removed 127.0.0.1:2181 is still dialled, the new member is not", got)
	}
}

// The members a reconfiguration names are kept by name: a new session resolves them
// again, as it resolves the connect string's names (go-zookeeper resolves its servers
// when a session starts). Keeping the addresses they had at the reconfiguration pins the
// client to them for good: once a member comes back at a new address under the same
// name (a restarted Kubernetes pod: a StatefulSet's rolling restart moves them all), no
// session of the client finds it again, while one given the names in its connect string
// would.
func TestEnsembleTrackerNewSessionResolvesNames(t *testing.T) {
	c, err := New("localhost:2181")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostList{resolve: true}
	if err := h.Init([]string{"localhost:2181"}); err != nil {
		t.Fatal(err)
	}
	c.useHostList(h, []string{"localhost:2181"})
	if _, servers := c.newHostList(); !slices.Equal(servers, []string{"localhost:2181"}) {
		t.Fatalf("a new session before any reconfiguration is given %v, want the connect string's name", servers)
	}
	c.applyConfig([]byte("server.1=localhost:3000:4000:participant;localhost:2181\nversion=10\n"))
	c.applyConfig([]byte("server.2=localhost:3001:4001:participant;localhost:2185\nversion=11\n"))
	if _, servers := c.newHostList(); !slices.Equal(servers, []string{"localhost:2185"}) {
		t.Fatalf("a new session after the reconfiguration is given %v, want the member's name localhost:2185 "+
			"(to be resolved again)", servers)
	}
}
