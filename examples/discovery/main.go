// Command discovery shows service discovery in the registry format of Curator's
// curator-x-discovery (package discovery): Java services using Curator, or Spring Cloud
// Zookeeper, on the same base path would see these instances, and these clients theirs.
//
//  1. Two instances of the service "greeter", each a real HTTP server with a ZooKeeper
//     client of its own (as two processes would have), register themselves.
//  2. A client finds them through a ServiceProvider (round robin over a cache: no
//     ZooKeeper round trip per request) and calls each in turn.
//  3. greeter-2 crashes: its HTTP server is gone and its ZooKeeper session goes silent
//     (a stalled proxy), so its node stays until the server expires the session. The
//     client notes each failed call (NoteError): after two, the down-instance policy
//     leaves greeter-2 out, and every request is answered by greeter-1. Once the session
//     expires, greeter-2's node is gone and the client's cache drops it.
//
// Run it:
//
//	go run ./examples/discovery                     # on an embedded ZooKeeper
//	go run ./examples/discovery -connect host:2181  # on yours (uses /examples/discovery)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	basePath = "/examples/discovery" // the registry's base path
	service  = "greeter"

	waitForCache = 30 * time.Second // how long the client waits for its cache to see a change
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

// sessionTimeout is the session timeout this example's clients ask for. A crashed
// instance's node stays until the server expires its session: that long.
const sessionTimeout = 4 * time.Second

// Details is the instances' payload. JavaClass names the class a Java reader would
// deserialize it to (Curator writes payloads with their class name).
type Details struct {
	Zone string `json:"zone"`
}

// JavaClass implements discovery.JavaTyped.
func (Details) JavaClass() string { return "com.example.GreeterDetails" }

func newClient(ctx context.Context, connect string) (*framework.Client, error) {
	c, err := framework.Connect(ctx, connect, framework.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", connect, err)
	}
	return c, nil
}

// greeter is one instance: an HTTP server and its registration.
type greeter struct {
	name   string
	http   *http.Server
	served chan struct{}
	proxy  *zktest.Proxy // between its ZooKeeper client and the server: how it crashes
	dead   bool
	client *framework.Client
	disc   *discovery.ServiceDiscovery[Details]
}

func startGreeter(ctx context.Context, connect, name, zone string) (*greeter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &greeter{name: name, served: make(chan struct{})}
	g.http = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", name)
	})}
	go func() { defer close(g.served); _ = g.http.Serve(ln) }()

	proxy, err := zktest.StartProxyFor(connect)
	if err != nil {
		g.stop()
		return nil, err
	}
	viaProxy := proxy.ConnectString()
	g.proxy = proxy
	if g.client, err = newClient(ctx, viaProxy); err != nil {
		g.stop()
		return nil, err
	}
	if g.disc, err = discovery.New[Details](g.client, basePath); err != nil {
		g.stop()
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	inst, err := discovery.NewInstance(service, Details{Zone: zone}, discovery.WithID(name),
		discovery.WithAddress("127.0.0.1"), discovery.WithPort(port), discovery.WithURISpec("{scheme}://{address}:{port}/hello"))
	if err != nil {
		g.stop()
		return nil, err
	}
	if err := g.disc.Register(ctx, inst); err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}

// crash stops answering HTTP and cuts the ZooKeeper client off without a word: the
// instance's node stays until the server expires the session.
func (g *greeter) crash() {
	_ = g.http.Close()
	<-g.served
	g.proxy.Stall()
	g.dead = true
}

// stop releases what the greeter holds (unregistering it if it still can).
func (g *greeter) stop() {
	_ = g.http.Close()
	<-g.served
	if g.dead && g.client != nil {
		_ = g.client.Close() // a crashed process does not unregister: do not wait for it
	}
	if g.disc != nil {
		_ = g.disc.Close()
	}
	if g.client != nil {
		_ = g.client.Close()
	}
	if g.proxy != nil {
		_ = g.proxy.Close()
	}
}

func run(ctx context.Context, connect string, w io.Writer) error {
	out := log.New(w, "", 0)
	out.Printf("== two greeter instances register under %s/%s ==", basePath, service)
	var greeters []*greeter
	defer func() {
		for _, g := range greeters {
			g.stop()
		}
	}()
	for i, zone := range []string{"eu-west", "eu-north"} {
		g, err := startGreeter(ctx, connect, "greeter-"+strconv.Itoa(i+1), zone)
		if err != nil {
			return err
		}
		greeters = append(greeters, g)
		out.Printf("%s registered (zone %s)", g.name, zone)
	}

	// The client: its own ZooKeeper client, a provider over a cache of the service.
	c, err := newClient(ctx, connect)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := discovery.New[Details](c, basePath)
	if err != nil {
		return err
	}
	defer d.Close()
	provider, err := discovery.NewProvider(d, service) // round robin, Curator's default policy
	if err != nil {
		return err
	}
	defer provider.Close()
	changed := make(chan struct{}, 64)
	provider.Cache().AddListener(func(ev discovery.CacheEvent) {
		if ev.Type == discovery.CacheChanged {
			changed <- struct{}{}
		}
	})
	if err := provider.Start(ctx); err != nil { // returns once the instances are read
		return err
	}
	all, err := provider.GetAllInstances()
	if err != nil {
		return err
	}
	for _, i := range all {
		out.Printf("client found %s at %s (zone %s)", i.ID, i.BuildURI(nil), i.Payload.Zone)
	}

	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	out.Printf("== the client calls the service, round robin ==")
	for range 4 {
		if err := call(ctx, out, provider, httpc); err != nil {
			return err
		}
	}

	out.Printf("== greeter-2 crashes ==")
	greeters[1].crash()
	out.Printf("greeter-2's HTTP server is gone; its ZooKeeper session has gone silent")
	for range 4 {
		if err := call(ctx, out, provider, httpc); err != nil {
			return err
		}
	}

	// Wait until the session of greeter-2 expires and the cache drops its node.
	timeout := time.After(waitForCache)
	for len(provider.Cache().Instances()) != 1 {
		select {
		case <-changed:
		case <-timeout:
			return fmt.Errorf("greeter-2 still in the cache after %v", waitForCache)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	out.Printf("greeter-2's session expired: its node is gone, and the client's cache lists %s only",
		provider.Cache().Instances()[0].ID)
	return call(ctx, out, provider, httpc)
}

// call makes one request, to the instance the provider picks; when an instance fails,
// it notes the error and tries the next one.
func call(ctx context.Context, out *log.Logger, p *discovery.ServiceProvider[Details], httpc *http.Client) error {
	for attempt := 0; attempt < 5; attempt++ {
		inst, err := p.GetInstance()
		if err != nil {
			return err
		}
		body, err := get(ctx, httpc, inst.BuildURI(nil))
		if err != nil {
			p.NoteError(inst) // after 2 errors, left out for 30 s (Curator's default policy)
			out.Printf("  %s failed: noted", inst.ID)
			continue
		}
		out.Printf("  request answered: %q", body)
		return nil
	}
	return errors.New("no instance answered")
}

func get(ctx context.Context, httpc *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
