package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
)

// defaultDiscoveryBase is where services register unless --base says otherwise (Spring
// Cloud Zookeeper's default root).
const defaultDiscoveryBase = "/services"

// instanceURI is what list and get print for an instance: its URI spec built, else
// address:port.
func instanceURI(i *discovery.Instance[json.RawMessage]) string {
	if i.URISpec != nil {
		return i.BuildURI(nil)
	}
	port := i.Port
	if port == 0 {
		port = i.SSLPort
	}
	if port == 0 {
		return i.Address
	}
	return i.Address + ":" + strconv.Itoa(port)
}

func (a *app) checkName(topic, what, s string) error {
	if _, err := discovery.NewInstance(s, 0, discovery.WithAddress("")); err != nil {
		return usagef(topic, "%s: bad %s %q: %v", topic, what, s, err)
	}
	return nil
}

// discoveryRegister is `zkcurator discovery register <name> --address A --port P
// [--payload JSON] ... -- <command...>`: the instance is registered while the command runs.
func (a *app) discoveryRegister(ctx context.Context, args []string) error {
	const topic = "discovery register"
	fs := a.newFlagSet(topic)
	base := fs.String("base", defaultDiscoveryBase, "the registry's base path")
	address := fs.String("address", "", "the instance's address (default: this host's first non-loopback address)")
	port := fs.Int("port", 0, "the instance's port")
	sslPort := fs.Int("ssl-port", 0, "the instance's SSL port")
	id := fs.String("id", "", "the instance's id (default: a random UUID)")
	payload := fs.String("payload", "", "the instance's payload, JSON")
	uriSpec := fs.String("uri-spec", "", "the instance's URI template, e.g. {scheme}://{address}:{port}")
	stype := fs.String("type", string(discovery.Dynamic), "DYNAMIC, STATIC, PERMANENT or DYNAMIC_SEQUENTIAL")
	timeout := fs.Duration("timeout", 0, "give up registering after this long (exit 75); 0 waits")
	foreground := fs.Bool("foreground", false, "run the command in zkcurator's process group")
	pos, argv, err := a.parseArgs(fs, topic, args, []string{"<name>"}, true)
	if err != nil {
		return err
	}
	if err := checkPath(topic, "--base", *base); err != nil {
		return err
	}
	if err := checkDurations(topic, map[string]time.Duration{"timeout": *timeout}); err != nil {
		return err
	}
	var raw json.RawMessage
	if *payload != "" {
		if !json.Valid([]byte(*payload)) {
			return usagef(topic, "%s: --payload is not JSON: %q", topic, *payload)
		}
		raw = json.RawMessage(*payload)
	}
	opts := []discovery.InstanceOption{discovery.WithPort(*port), discovery.WithSSLPort(*sslPort),
		discovery.WithID(*id), discovery.WithServiceType(discovery.ServiceType(*stype))}
	if *address != "" {
		opts = append(opts, discovery.WithAddress(*address))
	}
	if *uriSpec != "" {
		opts = append(opts, discovery.WithURISpec(*uriSpec))
	}
	inst, err := discovery.NewInstance(pos[0], raw, opts...)
	if err != nil {
		return usagef(topic, "%s: %v", topic, err)
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := discovery.New[json.RawMessage](c, *base)
	if err != nil {
		return usagef(topic, "%s: %v", topic, err)
	}
	defer d.Close()
	rctx, cancel := withTimeout(ctx, *timeout)
	err = d.Register(rctx, inst)
	cancel()
	if err != nil {
		if errors.Is(err, discovery.ErrInvalidInstance) {
			return usagef(topic, "%s: %v", topic, err)
		}
		return waitFailed(ctx, "registering "+pos[0], *timeout, err)
	}
	ch := child{argv: argv, grace: 10 * time.Second, foreground: *foreground, env: []string{
		"ZK_SERVICE_NAME=" + inst.Name,
		"ZK_SERVICE_ID=" + inst.ID,
	}}
	code, runErr := ch.run(a)
	closeErr := d.Close()
	switch {
	case runErr != nil:
		return runErr
	case code != 0:
		return &statusError{code: code}
	case closeErr != nil:
		return exitWith(exitError, "unregistering %s/%s: %v", inst.Name, inst.ID, closeErr)
	}
	return nil
}

// discoveryList is `zkcurator discovery list [<name>] [--json]`: the service names, or
// one line per instance of <name>: "<id> <uri>" (or its JSON).
func (a *app) discoveryList(ctx context.Context, args []string) error {
	const topic = "discovery list"
	fs := a.newFlagSet(topic)
	base := fs.String("base", defaultDiscoveryBase, "the registry's base path")
	asJSON := fs.Bool("json", false, "print each instance's JSON")
	if err := fs.Parse(args); err != nil {
		return a.flagError(topic, err)
	}
	rest := fs.Args()
	var name string
	if len(rest) > 0 {
		name, rest = rest[0], rest[1:]
		if err := fs.Parse(rest); err != nil {
			return a.flagError(topic, err)
		}
		if len(fs.Args()) > 0 {
			return usagef(topic, "%s: unexpected arguments %q", topic, fs.Args())
		}
		if err := a.checkName(topic, "name", name); err != nil {
			return err
		}
	}
	if err := checkPath(topic, "--base", *base); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := discovery.New[json.RawMessage](c, *base)
	if err != nil {
		return usagef(topic, "%s: %v", topic, err)
	}
	defer d.Close()
	if name == "" {
		names, err := d.QueryForNames(ctx)
		if err != nil {
			return exitWith(exitError, "listing the services under %s: %v", *base, err)
		}
		for _, n := range names {
			fmt.Fprintln(a.stdout, n)
		}
		if len(names) == 0 {
			return a.noneListed(ctx, c, *base, *base+" does not exist: no services", "no services under "+*base)
		}
		return nil
	}
	all, err := d.QueryForInstances(ctx, name)
	if all == nil && err != nil {
		return exitWith(exitError, "listing the instances of %s: %v", name, err)
	}
	for _, i := range all {
		a.printInstance(i, *asJSON)
	}
	if len(all) == 0 && err == nil {
		return a.noneListed(ctx, c, framework.JoinPath(*base, name),
			"service "+name+" does not exist under "+*base+": no instances", "service "+name+" has no instances")
	}
	if err != nil { // nodes that are not instances: listed the others, say which
		return exitWith(exitError, "%v", err)
	}
	return nil
}

// noneListed says why a list printed nothing, as queue list does: path does not exist
// (missing, exit 1) or has no children (empty, on stderr, exit 0).
func (a *app) noneListed(ctx context.Context, c *framework.Client, path, missing, empty string) error {
	st, err := c.Exists(ctx, path)
	if err != nil {
		return exitWith(exitError, "%v", err)
	}
	if st == nil {
		return exitWith(exitError, "%s", missing)
	}
	fmt.Fprintf(a.stderr, "zkcurator: %s\n", empty)
	return nil
}

func (a *app) printInstance(i *discovery.Instance[json.RawMessage], asJSON bool) {
	if asJSON {
		b, _ := i.Marshal() // it was just read from JSON: it marshals
		fmt.Fprintf(a.stdout, "%s\n", b)
		return
	}
	fmt.Fprintf(a.stdout, "%s %s\n", i.ID, instanceURI(i))
}

// discoveryGet is `zkcurator discovery get <name> [--strategy S] [--json]`: one instance
// picked by the strategy, printed as its URI (or JSON).
func (a *app) discoveryGet(ctx context.Context, args []string) error {
	const topic = "discovery get"
	fs := a.newFlagSet(topic)
	base := fs.String("base", defaultDiscoveryBase, "the registry's base path")
	asJSON := fs.Bool("json", false, "print the instance's JSON")
	strategy := fs.String("strategy", "round-robin", "round-robin (each run starts the rotation over: the first instance by id) or random")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<name>"}, false)
	if err != nil {
		return err
	}
	if err := a.checkName(topic, "name", pos[0]); err != nil {
		return err
	}
	if err := checkPath(topic, "--base", *base); err != nil {
		return err
	}
	var s discovery.BuiltinStrategy
	switch *strategy {
	case "round-robin":
		s = discovery.RoundRobin()
	case "random":
		s = discovery.Random()
	default:
		return usagef(topic, "%s: --strategy must be round-robin or random, not %q", topic, *strategy)
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := discovery.New[json.RawMessage](c, *base)
	if err != nil {
		return usagef(topic, "%s: %v", topic, err)
	}
	defer d.Close()
	p, err := discovery.NewProvider(d, pos[0], discovery.WithStrategy(s))
	if err != nil {
		return usagef(topic, "%s: %v", topic, err)
	}
	if err := p.Start(ctx); err != nil {
		return exitWith(exitError, "reading the instances of %s: %v", pos[0], err)
	}
	inst, err := p.GetInstance()
	if err != nil {
		return exitWith(exitError, "%v", err)
	}
	if *asJSON {
		a.printInstance(inst, true)
	} else {
		fmt.Fprintln(a.stdout, instanceURI(inst))
	}
	return nil
}
