package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// discovery register keeps the instance registered while the command runs, list and get
// find it, and it is gone once the command ended, whose status register passes through.
func TestDiscoveryRegisterListGet(t *testing.T) {
	srv := zktest.NewServer(t)
	dir := t.TempDir()
	ready, release := filepath.Join(dir, "ready"), filepath.Join(dir, "release")
	script := fmt.Sprintf(`echo "$ZK_SERVICE_NAME $ZK_SERVICE_ID" > %[1]s.tmp && mv %[1]s.tmp %[1]s; n=0; `+
		`while [ ! -f %[2]s ]; do n=$((n+1)); [ $n -lt 1200 ] || exit 99; sleep 0.05; done; exit 4`, ready, release)
	p := start(t, srv.ConnectString(), "discovery", "register", "orders", "--id", "o1", "--address", "10.0.0.5",
		"--port", "8080", "--payload", `{"zone": "eu"}`, "--uri-spec", "{scheme}://{address}:{port}/v1", "--", "sh", "-c", script)
	waitFile(t, ready, 30*time.Second)
	assert.Equal(t, "orders o1\n", read(t, ready))

	l := zkc(t, srv.ConnectString(), "discovery", "list")
	require.Equal(t, 0, l.code, l.stderr.String())
	assert.Equal(t, "orders\n", l.stdout.String())
	l = zkc(t, srv.ConnectString(), "discovery", "list", "orders")
	require.Equal(t, 0, l.code, l.stderr.String())
	assert.Equal(t, "o1 http://10.0.0.5:8080/v1\n", l.stdout.String())
	l = zkc(t, srv.ConnectString(), "discovery", "list", "orders", "--json")
	require.Equal(t, 0, l.code, l.stderr.String())
	assert.True(t, strings.HasPrefix(l.stdout.String(), `{"name":"orders","id":"o1","address":"10.0.0.5","port":8080,"sslPort":null,"payload":{"zone":"eu"},`), l.stdout.String())
	g := zkc(t, srv.ConnectString(), "discovery", "get", "orders")
	require.Equal(t, 0, g.code, g.stderr.String())
	assert.Equal(t, "http://10.0.0.5:8080/v1\n", g.stdout.String())

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	assert.Equal(t, 4, p.wait(t, 30*time.Second), "the command's status")
	children, err := zktest.Children(context.Background(), srv.ConnectString(), "/services/orders")
	require.NoError(t, err)
	assert.Empty(t, children, "the instance is unregistered when the command ends")
	g = zkc(t, srv.ConnectString(), "discovery", "get", "orders")
	assert.Equal(t, 1, g.code)
	assert.Contains(t, g.stderr.String(), "no instance available")
	l = zkc(t, srv.ConnectString(), "discovery", "list", "nothing", "--base", "/elsewhere")
	assert.Equal(t, 1, l.code, "no such service: %s", l.stderr.String())
	assert.Empty(t, l.stdout.String())
}

func TestDiscoveryUsage(t *testing.T) {
	for _, args := range [][]string{
		{"discovery"},
		{"discovery", "find", "x"},
		{"discovery", "register", "a/b", "--", "true"},
		{"discovery", "register", "svc"},
		{"discovery", "register", "svc", "--payload", "{nope", "--", "true"},
		{"discovery", "register", "svc", "--port", "70000", "--", "true"},
		{"discovery", "register", "svc", "--type", "SOMETIMES", "--", "true"},
		{"discovery", "register", "svc", "--uri-spec", "{x", "--", "true"},
		{"discovery", "register", "svc", "--base", "rel", "--", "true"},
		{"discovery", "list", ".."},
		{"discovery", "list", "a", "b"},
		{"discovery", "get"},
		{"discovery", "get", "svc", "--strategy", "best"},
	} {
		p := zkc(t, "127.0.0.1:1", args...)
		assert.Equal(t, 2, p.code, "%q: %s", args, p.stderr.String())
	}
}

// discovery list of a service that does not exist, or has no instances, says so on stderr
// as queue list does for a missing or empty queue: a missing one exits 1, an empty one 0.
// So does the list of services when there are none.
func TestDiscoveryListMissingOrEmpty(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	l := zkc(t, c, "discovery", "list", "nosuch")
	assert.Equal(t, 1, l.code)
	assert.Empty(t, l.stdout.String())
	assert.Contains(t, l.stderr.String(), "service nosuch does not exist under /services: no instances")
	l = zkc(t, c, "discovery", "list")
	assert.Equal(t, 1, l.code)
	assert.Empty(t, l.stdout.String())
	assert.Contains(t, l.stderr.String(), "/services does not exist: no services")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zktest.Dial(ctx, c, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	for _, p := range []string{"/services", "/services/idle"} {
		_, err = conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	l = zkc(t, c, "discovery", "list", "idle")
	assert.Equal(t, 0, l.code)
	assert.Empty(t, l.stdout.String())
	assert.Contains(t, l.stderr.String(), "service idle has no instances")
	l = zkc(t, c, "discovery", "list", "nosuch")
	assert.Equal(t, 1, l.code)
	assert.Contains(t, l.stderr.String(), "service nosuch does not exist under /services: no instances")

	_, err = conn.Create("/elsewhere", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	l = zkc(t, c, "discovery", "list", "--base", "/elsewhere")
	assert.Equal(t, 0, l.code)
	assert.Empty(t, l.stdout.String())
	assert.Contains(t, l.stderr.String(), "no services under /elsewhere")
}

// Each discovery get starts the rotation over: with round-robin (the default) every run
// prints the first instance by id, as its help says; random picks among them.
func TestDiscoveryGetStartsRotationOverEachRun(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[json.RawMessage](c, "/services")
	require.NoError(t, err)
	defer d.Close()
	for _, id := range []string{"b", "a"} {
		inst, err := discovery.NewInstance[json.RawMessage]("orders", nil, discovery.WithID(id),
			discovery.WithAddress("10.0.0."+map[string]string{"a": "1", "b": "2"}[id]), discovery.WithPort(80))
		require.NoError(t, err)
		require.NoError(t, d.Register(ctx, inst))
	}
	for range 3 {
		assert.Equal(t, "10.0.0.1:80", out(t, srv.ConnectString(), "discovery", "get", "orders"), "not the first instance by id")
	}
	h := zkc(t, "127.0.0.1:1", "help", "discovery", "get")
	assert.Contains(t, h.stdout.String(), "starts the rotation over")
	assert.NotContains(t, h.stdout.String(), "(round robin)")
}
