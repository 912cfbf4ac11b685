package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestCounterUsage(t *testing.T) {
	cases := []struct {
		args []string
		out  string
	}{
		{[]string{"counter"}, "counter: missing subcommand"},
		{[]string{"counter", "add", "/c"}, "counter add: missing <delta>"},
		{[]string{"counter", "add", "/c", "lots"}, `bad <delta> "lots": want a whole number that fits in 64 bits`},
		{[]string{"counter", "add", "/c", "9223372036854775808"}, "fits in 64 bits"},
		{[]string{"counter", "add", "/c", "2147483648", "--int"}, "fits in 32 bits"},
		{[]string{"counter", "add", "/c", "-3"}, "flag provided but not defined: -3"},
		{[]string{"counter", "set", "/c", "1", "--expect", "x"}, `bad --expect "x"`},
		{[]string{"counter", "set", "/c", "1", "--expect", ""}, `bad --expect ""`}, // an unset shell variable must not turn it into a forced set
		{[]string{"counter", "get", "c"}, "bad path"},
		{[]string{"counter", "get", "/zookeeper"}, "cannot be used"},
		{[]string{"sharedcount", "set", "/s"}, "sharedcount set: missing <value>"},
		{[]string{"sharedcount", "set", "/s", "2147483648"}, "fits in 32 bits"},
		{[]string{"sharedcount", "set", "/s", "1", "--version", "-2"}, "--version must be a node version"},
		{[]string{"sharedcount", "get", "/s", "/t"}, "unexpected arguments"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			p := zkc(t, "127.0.0.1:1", c.args...)
			assert.Equal(t, 2, p.code)
			assert.Contains(t, p.stderr.String(), c.out)
			assert.Contains(t, p.stderr.String(), "for usage.")
		})
	}
	for _, topic := range []string{"counter", "counter add", "sharedcount set"} {
		p := zkc(t, "127.0.0.1:1", append([]string{"help"}, strings.Fields(topic)...)...)
		assert.Equal(t, 0, p.code)
		assert.Contains(t, p.stdout.String(), "Usage: zkcurator "+strings.Fields(topic)[0])
	}
}

// out runs zkcurator to its end, wants exit status 0 and returns its stdout trimmed.
func out(t *testing.T, connect string, args ...string) string {
	t.Helper()
	p := zkc(t, connect, args...)
	require.Equal(t, 0, p.code, "zkcurator %s: %s", strings.Join(args, " "), p.stderr)
	return strings.TrimSpace(p.stdout.String())
}

func TestCounter(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	const path = "/cli/counter"
	assert.Equal(t, "0", out(t, c, "counter", "get", path), "a counter with no node holds 0")
	assert.Equal(t, "5", out(t, c, "counter", "add", path, "5"))
	assert.Equal(t, "3", out(t, c, "counter", "add", path, "--", "-2"))
	assert.Equal(t, "", out(t, c, "counter", "set", path, "10"))
	assert.Equal(t, "10", out(t, c, "counter", "get", path))

	p := zkc(t, c, "counter", "set", path, "11", "--expect", "3")
	assert.Equal(t, 3, p.code)
	assert.Contains(t, p.stderr.String(), "not set: the counter holds 10, not 3")
	assert.Equal(t, "10", out(t, c, "counter", "get", path), "a failed compare-and-set writes nothing")
	assert.Equal(t, "", out(t, c, "counter", "set", path, "11", "--expect", "10"))
	assert.Equal(t, "11", out(t, c, "counter", "get", path))

	p = zkc(t, c, "counter", "get", path, "--int")
	assert.Equal(t, 1, p.code, "an 8-byte node read as an Int")
	assert.Contains(t, p.stderr.String(), "holds 8 bytes (00 00 00 00 00 00 00 0b), not a 4-byte big-endian integer")

	// Several processes adding at once: none of the additions is lost or applied twice.
	const procs = 6
	adders := make([]*proc, procs)
	for i := range adders {
		adders[i] = start(t, c, "counter", "add", "/cli/together", "1", "--int")
	}
	seen := map[string]bool{}
	for _, a := range adders {
		require.Equal(t, 0, a.wait(t, 60*time.Second), "stderr: %s", a.stderr)
		seen[strings.TrimSpace(a.stdout.String())] = true
	}
	assert.Equal(t, strconv.Itoa(procs), out(t, c, "counter", "get", "/cli/together", "--int"))
	assert.Len(t, seen, procs, "each addition saw its own value after it: %v", seen)
}

func TestSharedCount(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	const path = "/cli/shared"
	p := zkc(t, c, "sharedcount", "get", path)
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "no shared count there")
	p = zkc(t, c, "sharedcount", "set", path, "4", "--version", "0")
	assert.Equal(t, 3, p.code, "a versioned set does not create the node")
	assert.Contains(t, p.stderr.String(), "the node does not exist")
	p = zkc(t, c, "sharedcount", "get", path)
	assert.Equal(t, 1, p.code, "nothing was created")

	assert.Equal(t, "", out(t, c, "sharedcount", "set", path, "7"))
	got := strings.Fields(out(t, c, "sharedcount", "get", path, "--with-version"))
	require.Len(t, got, 2)
	assert.Equal(t, "7", got[0])
	assert.Equal(t, "7", out(t, c, "sharedcount", "get", path))

	v, err := strconv.Atoi(got[1])
	require.NoError(t, err)
	other := strconv.Itoa(v + 10)
	p = zkc(t, c, "sharedcount", "set", path, "8", "--version", other)
	assert.Equal(t, 3, p.code)
	assert.Contains(t, p.stderr.String(), "not set: the node is not at version "+other)
	assert.Equal(t, "", out(t, c, "sharedcount", "set", path, "8", "--version", got[1]))
	assert.Equal(t, "8", out(t, c, "sharedcount", "get", path))
	p = zkc(t, c, "sharedcount", "set", path, "9", "--version", got[1])
	assert.Equal(t, 3, p.code, "the version moved on with the last set")

	require.Equal(t, "", out(t, c, "counter", "set", "/cli/long", "1"))
	p = zkc(t, c, "sharedcount", "get", "/cli/long")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "holds 8 bytes")
}

// TestCuratorCounters runs the counter commands next to Curator's DistributedAtomicLong
// and SharedCount on the same paths.
func TestCuratorCounters(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	tool := curatortest.Start(t, c, curatortest.WithSessionTimeout(4*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	do := func(format string, args ...any) string {
		t.Helper()
		got, err := tool.Do(ctx, format, args...)
		require.NoError(t, err)
		return got
	}

	do("along.new j /cli/java/long")
	do("along.add j 5 3")
	assert.Equal(t, "15", out(t, c, "counter", "get", "/cli/java/long"))
	assert.Equal(t, "12", out(t, c, "counter", "add", "/cli/java/long", "--", "-3"))
	assert.Equal(t, "12", do("along.get j"))

	do("count.new s /cli/java/shared 2")
	assert.Equal(t, "2", out(t, c, "sharedcount", "get", "/cli/java/shared"))
	assert.Equal(t, "", out(t, c, "sharedcount", "set", "/cli/java/shared", "40"))
	require.Eventually(t, func() bool {
		got, err := tool.Do(ctx, "count.get s")
		return err == nil && strings.HasPrefix(got, "40 ")
	}, 20*time.Second, 20*time.Millisecond, "Curator's SharedCount did not see the set")
	do("count.set s 41")
	assert.Equal(t, "41", out(t, c, "sharedcount", "get", "/cli/java/shared"))
	do("count.close s")
}

// TestCounterSetRefusesForeignData checks that counter set and sharedcount set refuse to
// overwrite a node holding bytes of another format (text, the other counter size) with
// exit status 1 and nothing written, overwrite it with --force, and write over a node
// with no data.
func TestCounterSetRefusesForeignData(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zktest.Dial(ctx, c, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	for _, n := range [][2]string{{"/cli", ""}, {"/cli/text", "hello"}, {"/cli/text2", "hello"}, {"/cli/empty", ""}, {"/cli/empty2", ""}} {
		_, err := conn.Create(n[0], []byte(n[1]), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	data := func(p string) string {
		b, _, err := conn.Get(p)
		require.NoError(t, err)
		return string(b)
	}

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"counter", "set", "/cli/text", "5"}, `/cli/text holds 5 bytes (68 65 6c 6c 6f): text "hello", not a 8-byte counter: not overwritten (--force overwrites it)`},
		{[]string{"counter", "set", "/cli/text", "5", "--int"}, "not a 4-byte counter: not overwritten"},
		{[]string{"sharedcount", "set", "/cli/text", "5"}, "/cli/text holds 5 bytes (68 65 6c 6c 6f): text \"hello\", not a shared count: not overwritten"},
		{[]string{"sharedcount", "set", "/cli/text", "5", "--version", "0"}, "not a shared count: not overwritten"},
	} {
		p := zkc(t, c, tc.args...)
		assert.Equal(t, 1, p.code, "%q", tc.args)
		assert.Contains(t, p.stderr.String(), tc.says, "%q", tc.args)
		assert.Equal(t, "hello", data("/cli/text"), "%q wrote", tc.args)
	}
	p := zkc(t, c, "sharedcount", "set", "/cli/text", "5", "--version", "3")
	assert.Equal(t, 3, p.code, "another version is a conflict before the format is looked at")

	// The other counter size.
	require.Equal(t, "", out(t, c, "counter", "set", "/cli/long", "1"))
	p = zkc(t, c, "counter", "set", "/cli/long", "2", "--int")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "holds 8 bytes (00 00 00 00 00 00 00 01): an 8-byte counter (counter, without --int), not a 4-byte counter")
	p = zkc(t, c, "sharedcount", "set", "/cli/long", "2")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "an 8-byte counter (counter, without --int), not a shared count")
	assert.Equal(t, "1", out(t, c, "counter", "get", "/cli/long"))

	// --force overwrites; a node with no data is written without it.
	assert.Equal(t, "", out(t, c, "counter", "set", "/cli/text", "5", "--force"))
	assert.Equal(t, "5", out(t, c, "counter", "get", "/cli/text"))
	assert.Equal(t, "", out(t, c, "sharedcount", "set", "/cli/text2", "6", "--force"))
	assert.Equal(t, "6", out(t, c, "sharedcount", "get", "/cli/text2"))
	assert.Equal(t, "", out(t, c, "counter", "set", "/cli/empty", "7", "--int"))
	assert.Equal(t, "7", out(t, c, "counter", "get", "/cli/empty", "--int"))
	assert.Equal(t, "", out(t, c, "sharedcount", "set", "/cli/empty2", "8"))
	assert.Equal(t, "8", out(t, c, "sharedcount", "get", "/cli/empty2"))
	assert.Equal(t, "", out(t, c, "counter", "set", "/cli/new/deep", "9"), "a missing node is made, its parents too")
	assert.Equal(t, "9", out(t, c, "counter", "get", "/cli/new/deep"))
}
