package reliability_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// childEnv marks the test binary re-run as a lock client process.
const childEnv = "ZOOCURATOR_RELIABILITY_CHILD"

// childMain is a lock client in its own process: it takes the mutex, says so with its
// token, reads the version the parent gives it (its read of the store), waits for "GO",
// and then asks for its write — ignoring its lease's Done, like a process that was paused
// in the middle of its critical section and does not look before it writes.
func childMain() int {
	connect, path := os.Getenv("CHILD_CONNECT"), os.Getenv("CHILD_PATH")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := framework.Connect(ctx, connect, framework.WithSessionTimeout(victimSession))
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer c.Close()
	m, err := mutex.New(c, path)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	tok, err := lease.Token(ctx)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println("TOKEN", tok)
	in := bufio.NewScanner(os.Stdin)
	var version string
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 2 && f[0] == "VERSION":
			version = f[1]
		case len(f) == 1 && f[0] == "GO":
			fmt.Println("WRITE", tok, version)
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			_ = lease.Release(rctx)
			rcancel()
			return 0
		}
	}
	return 1
}

// pausedHolder runs the scenario: a child process holds the lock and reads the store,
// is paused (SIGSTOP) past its session timeout, another client takes the lock and
// writes, and then the child resumes and writes with its old token. It returns the store.
func pausedHolder(t *testing.T, fenced bool) *store {
	e := newEnv(t, 1)
	path := e.base + "/m"
	st := &store{fenced: fenced}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "CHILD_CONNECT="+ens.ConnectString(), "CHILD_PATH="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	next := func() []string {
		require.True(t, lines.Scan(), "child said nothing")
		return strings.Fields(lines.Text())
	}

	f := next()
	require.Equal(t, "TOKEN", f[0], "child: %v", f)
	childToken, _ := strconv.ParseInt(f[1], 10, 64)
	_, err = fmt.Fprintf(stdin, "VERSION %d\n", st.read()) // the child reads the store ...
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP)) // ... and is paused before it writes

	// Its session expires on the server; the other client gets the lock and writes.
	m, err := mutex.New(e.others[0], path)
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	tok, err := lease.Token(ctx)
	require.NoError(t, err)
	assert.Greater(t, tok, childToken)
	require.True(t, st.write(tok, st.read()))
	require.NoError(t, lease.Release(ctx))

	// The child wakes up and writes with its old token and its stale read.
	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	_, err = io.WriteString(stdin, "GO\n")
	require.NoError(t, err)
	f = next()
	require.Equal(t, "WRITE", f[0], "child: %v", f)
	wt, _ := strconv.ParseInt(f[1], 10, 64)
	wv, _ := strconv.ParseInt(f[2], 10, 64)
	st.write(wt, wv)
	require.NoError(t, cmd.Wait())
	e.checkClean(path)
	return st
}

func TestFencingPausedClientProcess(t *testing.T) {
	leakcheck.Check(t)
	st := pausedHolder(t, true)
	accepted, rejected, lost := st.counts()
	assert.Equal(t, 1, accepted)
	assert.Equal(t, 1, rejected, "the paused holder's late write is refused")
	assert.Zero(t, lost, "no accepted write lost an update")
}

// Negative control: the same scenario against a store that ignores tokens loses an
// update, and the checker says so.
func TestFencingCheckerNegativeControl(t *testing.T) {
	leakcheck.Check(t)
	st := pausedHolder(t, false)
	_, _, lost := st.counts()
	assert.Equal(t, 1, lost, "without fencing the paused holder's late write is accepted and loses an update")
}
