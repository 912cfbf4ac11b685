package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// sessionTimeoutOf runs zkcurator with args (a lock run whose command waits) and returns
// the session timeout the server granted its connection, read from the server's "cons".
func sessionTimeoutOf(t *testing.T, srv *zktest.Server, args ...string) time.Duration {
	t.Helper()
	dir := t.TempDir()
	started, stop := filepath.Join(dir, "started"), filepath.Join(dir, "stop")
	args = append(args, "lock", "run", "/cli/session", "--", "sh", "-c",
		fmt.Sprintf(`touch %s; n=0; while [ ! -f %s ]; do n=$((n+1)); [ $n -lt 1200 ] || exit 99; sleep 0.05; done`, started, stop))
	p := start(t, srv.ConnectString(), args...)
	waitFile(t, started, 20*time.Second)
	// zkcurator's session is the owner of its lock node; "cons" shows its timeout.
	owners, err := zktest.EphemeralOwners(srv.Addr())
	require.NoError(t, err)
	var sid int64
	for id, nodes := range owners {
		for _, n := range nodes {
			if strings.HasPrefix(n, "/cli/session/") {
				sid = id
			}
		}
	}
	require.NotZero(t, sid, "zkcurator's lock node: %v", owners)
	cons, err := zktest.FourLetterWord(srv.Addr(), "cons", 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	require.Equal(t, 0, p.wait(t, 20*time.Second))
	m := regexp.MustCompile(fmt.Sprintf(`sid=0x%x,.*,to=([0-9]+),`, sid)).FindStringSubmatch(cons)
	require.NotNil(t, m, "zkcurator's session 0x%x: %s", sid, cons)
	ms, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return time.Duration(ms) * time.Millisecond
}

// Without --session-timeout, zkcurator asks for the library's default session timeout
// (whatever framework.WithSessionTimeout's default is), not a number of its own; with it,
// for the one given.
func TestSessionTimeoutDefault(t *testing.T) {
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Connect(ctx, srv.ConnectString()) // the library's defaults
	require.NoError(t, err)
	want := c.NegotiatedSessionTimeout()
	require.NoError(t, c.Close())

	assert.Equal(t, want, sessionTimeoutOf(t, srv), "the library's default")
	assert.Equal(t, 5*time.Second, sessionTimeoutOf(t, srv, "--session-timeout", "5s"))
}
