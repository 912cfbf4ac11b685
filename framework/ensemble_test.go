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

// The tracker's watch is set before Connect returns, with no request counted and no
// watch counted by Watches; the first configuration does not replace the connect
// string's servers (here a proxy); a new session after expiry sets it again; Close ends
// it on the server.
func TestEnsembleTrackerWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Connect(ctx, proxy.ConnectString(), WithNamespace("ns"), WithSessionTimeout(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := configWatches(t, srv.Addr()); n != 1 {
		t.Fatalf("%d watches on %s when Connect returned, want 1", n, configPath)
	}
	if c.Requests() != 0 || c.Watches() != 0 {
		t.Fatalf("Requests %d, Watches %d: the tracker's read and watch counted", c.Requests(), c.Watches())
	}
	want, err := resolveServers(strings.Split(proxy.ConnectString(), ","))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if got := c.Servers(); !slices.Equal(got, want) {
		t.Fatalf("Servers %v, want the proxy's %v", got, want)
	}

	sid := c.SessionID()
	proxy.Stall()
	waitFor(t, "the session's expiry on the server", func() bool {
		out, err := zktest.FourLetterWord(srv.Addr(), "cons", 5*time.Second)
		return err == nil && !strings.Contains(out, fmt.Sprintf("sid=0x%x", sid))
	})
	proxy.Heal()
	waitFor(t, "a new session", func() bool { return c.SessionID() != sid && c.ConnectedServer() != "" })
	waitFor(t, "the watch set again on the new session", func() bool { return configWatches(t, srv.Addr()) == 1 })
	if c.Watches() != 0 {
		t.Fatalf("Watches %d after the new session", c.Watches())
	}
	if got := c.Servers(); !slices.Equal(got, want) {
		t.Fatalf("Servers %v after a new session, want the proxy's %v", got, want)
	}
	c.Close()
	waitFor(t, "no watch left after Close", func() bool { return configWatches(t, srv.Addr()) == 0 })
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}
