// Command cache shows a service following its configuration subtree with a tree cache of
// package cache (Curator's TreeCache):
//
//  1. The service starts a TreeCache on its config subtree and reads its settings from
//     the cache, with no round trip to ZooKeeper.
//  2. An operator, on another client, changes the settings: updates one, adds one, adds
//     a nested node, deletes one. The service hears each change as it is made.
//  3. The service's client is cut off from ZooKeeper (a stalled proxy). It keeps serving
//     its cached, now stale, config; the operator changes a setting meanwhile; once the
//     network heals, the cache reads again and reports the change it missed.
//
// Run it:
//
//	go run ./examples/cache                     # on an embedded ZooKeeper
//	go run ./examples/cache -connect host:2181  # on yours (uses /examples/cache)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	configPath = "/examples/cache/config/orders" // the service's config subtree

	waitForEvent = 15 * time.Second // how long the service waits to hear of a change
)

func main() {
	connect := flag.String("connect", os.Getenv("ZK_CONNECT"),
		"ZooKeeper host:port[,host:port...][/chroot] (default $ZK_CONNECT); empty: start one for this run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv, err := zktest.StartStandalone(ctx, zktest.UseServers(*connect), zktest.WithStartNotice(os.Stderr))
	if err == nil {
		err = run(ctx, srv.ConnectString(), os.Stdout)
		srv.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// sessionTimeout is the session timeout this example's clients ask for (framework's
// default is 30 s; Curator asks for 60 s). It is how long the server keeps the session of a client
// that went silent — crashed, paused or cut off — and with it the client's ephemeral
// nodes: its lock, lease or election nodes. Others wait up to that long before a crashed
// holder's place is theirs. Shorter means a faster take-over, but a pause or network blip
// that long costs a holder its session.
const sessionTimeout = 4 * time.Second

// newClient connects a client to ZooKeeper with the options this example relies on.
// Close it when done.
func newClient(ctx context.Context, connect string) (*framework.Client, error) {
	c, err := framework.Connect(ctx, connect, framework.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", connect, err)
	}
	return c, nil
}

func run(ctx context.Context, connect string, w io.Writer) error {
	out := log.New(w, "", 0)

	// The operator's client: it writes the configuration.
	op, err := newClient(ctx, connect)
	if err != nil {
		return err
	}
	defer op.Close()
	if err := op.Delete(ctx, configPath, framework.WithChildren(), framework.Quietly()); err != nil {
		return err // left over from an earlier run on your ZooKeeper
	}
	for _, s := range []struct{ name, value string }{{"timeout", "5s"}, {"retries", "3"}} {
		if _, err := op.Create(ctx, configPath+"/"+s.name, []byte(s.value), framework.WithParents()); err != nil {
			return err
		}
	}
	defer op.Delete(context.WithoutCancel(ctx), configPath, framework.WithChildren(), framework.Quietly())

	// The service's client reaches ZooKeeper through a proxy, so that we can cut it off.
	proxy, err := zktest.StartProxyFor(connect)
	if err != nil {
		return err
	}
	viaProxy := proxy.ConnectString()
	defer proxy.Close()
	svc, err := newClient(ctx, viaProxy)
	if err != nil {
		return err
	}
	defer svc.Close()

	out.Printf("== the service starts following %s ==", configPath)
	config, err := cache.NewTreeCache(svc, configPath, cache.WithStartMode(cache.BuildInitialCache))
	if err != nil {
		return err
	}
	heard := make(chan cache.Event, 64)
	config.AddListener(func(ev cache.Event) {
		heard <- ev // the listener runs on the cache's goroutine: hand the event off
	})
	if err := config.Start(ctx); err != nil { // returns once the subtree is read
		return err
	}
	defer config.Close()
	printView(out, "the service's config at start", config)

	out.Printf("== the operator changes the config; the service hears each change ==")
	changes := []struct {
		what   string
		change func() error
		expect []string // the events the service should hear, as printed
	}{
		{"set timeout to 10s", func() error { return set(ctx, op, "timeout", "10s") },
			[]string{"NODE_UPDATED timeout = 10s (was 5s)"}},
		{"add max-batch = 100", func() error { return add(ctx, op, "max-batch", "100") },
			[]string{"NODE_ADDED max-batch = 100"}},
		{"add a nested node payment/provider = acme", func() error {
			if err := add(ctx, op, "payment", "v1"); err != nil {
				return err
			}
			return add(ctx, op, "payment/provider", "acme")
		}, []string{"NODE_ADDED payment = v1", "NODE_ADDED payment/provider = acme"}},
		{"delete retries", func() error { return op.Delete(ctx, configPath+"/retries") },
			[]string{"NODE_REMOVED retries"}},
	}
	for _, c := range changes {
		out.Printf("operator: %s", c.what)
		if err := c.change(); err != nil {
			return err
		}
		got, err := hear(ctx, heard, len(c.expect), nil)
		if err != nil {
			return err
		}
		for _, line := range got {
			out.Printf("  service heard: %s", line)
		}
		if !slices.Equal(got, c.expect) {
			return fmt.Errorf("after %q the service heard %q, want %q", c.what, got, c.expect)
		}
	}

	if err := cutOff(ctx, out, proxy, op, config, heard); err != nil {
		return err
	}

	printView(out, "the service's final config", config)
	want := map[string]string{"timeout": "30s", "max-batch": "100", "payment": "v1", "payment/provider": "acme"}
	if got := view(config); !maps.Equal(got, want) {
		return fmt.Errorf("final config %v, want %v", got, want)
	}
	out.Printf("the service's cache matches what the operator wrote")
	return nil
}

// cutOff cuts the service's client off, changes a setting meanwhile, heals the network
// and checks that the service hears of the change.
func cutOff(ctx context.Context, out *log.Logger, proxy *zktest.Proxy,
	op *framework.Client, config *cache.TreeCache, heard <-chan cache.Event) error {
	out.Printf("== the service's client is cut off from ZooKeeper ==")
	proxy.Stall() // a network partition: the service hears nothing from now on
	out.Printf("the proxy stalls the service's traffic")
	if _, err := hear(ctx, heard, 0, []cache.EventType{cache.ConnectionSuspended}); err != nil {
		return err
	}
	out.Printf("  service heard: %v: it keeps serving its cached config", cache.ConnectionSuspended)

	out.Printf("operator: set timeout to 30s (the service cannot hear it)")
	if err := set(ctx, op, "timeout", "30s"); err != nil {
		return err
	}
	stale, _ := config.Get(configPath + "/timeout")
	out.Printf("  service, still cut off, reads timeout = %s from its cache (stale)", stale.Data)

	proxy.Heal()
	out.Printf("the network heals")
	// Wait for the reconnection and for the missed change, in whichever order they come,
	// and print them in a fixed order.
	got, err := hear(ctx, heard, 1, []cache.EventType{cache.ConnectionReconnected})
	if err != nil {
		return err
	}
	out.Printf("  service heard: %v", cache.ConnectionReconnected)
	for _, line := range got {
		out.Printf("  service heard: %s  (made while it was cut off)", line)
	}
	if want := []string{"NODE_UPDATED timeout = 30s (was 10s)"}; !slices.Equal(got, want) {
		return fmt.Errorf("after reconnecting the service heard %q, want %q", got, want)
	}
	return nil
}

// hear waits until the service has heard n node events and every connection event in
// conns. It returns the node events, described as the service prints them.
func hear(ctx context.Context, heard <-chan cache.Event, n int, conns []cache.EventType) ([]string, error) {
	var got []string
	pending := slices.Clone(conns)
	timeout := time.After(waitForEvent)
	for len(got) < n || len(pending) > 0 {
		select {
		case ev := <-heard:
			switch ev.Type {
			case cache.TreeNodeAdded, cache.TreeNodeUpdated, cache.TreeNodeRemoved:
				got = append(got, describe(ev))
			default:
				if i := slices.Index(pending, ev.Type); i >= 0 {
					pending = slices.Delete(pending, i, i+1)
				}
			}
		case <-timeout:
			return nil, fmt.Errorf("the service heard %q and is still waiting for %d node events and %v", got, n-len(got), pending)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return got, nil
}

// describe prints a node event with the path relative to the config subtree, e.g.
// "NODE_UPDATED timeout = 10s (was 5s)".
func describe(ev cache.Event) string {
	name := setting(ev.Data.Path)
	switch ev.Type {
	case cache.TreeNodeAdded:
		return fmt.Sprintf("%v %s = %s", ev.Type, name, ev.Data.Data)
	case cache.TreeNodeUpdated:
		return fmt.Sprintf("%v %s = %s (was %s)", ev.Type, name, ev.Data.Data, ev.Old.Data)
	default:
		return fmt.Sprintf("%v %s", ev.Type, name)
	}
}

// view returns the settings the cache holds, by name relative to the config subtree
// (its root, which holds no setting, left out).
func view(config *cache.TreeCache) map[string]string {
	settings := map[string]string{}
	for p, d := range config.Snapshot() {
		if p != configPath {
			settings[setting(p)] = string(d.Data)
		}
	}
	return settings
}

func printView(out *log.Logger, title string, config *cache.TreeCache) {
	settings := view(config)
	names := make([]string, 0, len(settings))
	for name := range settings {
		names = append(names, name)
	}
	slices.Sort(names)
	out.Printf("%s:", title)
	for _, name := range names {
		out.Printf("  %s = %s", name, settings[name])
	}
}

func setting(path string) string { return strings.TrimPrefix(path, configPath+"/") }

func set(ctx context.Context, c *framework.Client, name, value string) error {
	_, err := c.SetData(ctx, configPath+"/"+name, []byte(value), -1)
	return err
}

func add(ctx context.Context, c *framework.Client, name, value string) error {
	_, err := c.Create(ctx, configPath+"/"+name, []byte(value))
	return err
}
