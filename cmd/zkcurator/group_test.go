package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/zktest"
)

// group join keeps the process a member while the command runs (the command gets the
// group's path and its id), group members lists it with its payload, and the member node
// is gone once the command ended, whose status join passes through.
func TestGroupJoinAndMembers(t *testing.T) {
	srv := zktest.NewServer(t)
	dir := t.TempDir()
	joined, release := filepath.Join(dir, "joined"), filepath.Join(dir, "release")
	// The line is written aside and renamed into place: the test reads the file as soon as
	// it exists (written in place, it was read empty once, between its creation and the
	// echo's write).
	script := fmt.Sprintf(`echo "$ZK_GROUP_PATH $ZK_GROUP_ID" > %[1]s.tmp && mv %[1]s.tmp %[1]s; n=0; `+
		`while [ ! -f %[2]s ]; do n=$((n+1)); [ $n -lt 1200 ] || exit 99; sleep 0.05; done; exit 3`, joined, release)
	p := start(t, srv.ConnectString(), "group", "join", "/cli/group", "w1", "--data", "10.0.0.1:80", "--", "sh", "-c", script)
	waitFile(t, joined, 30*time.Second)
	assert.Equal(t, "/cli/group w1\n", read(t, joined))

	other := start(t, srv.ConnectString(), "group", "join", "/cli/group", "w2", "--", "sh", "-c", "exit 0")
	assert.Equal(t, 0, other.wait(t, 30*time.Second))

	m := zkc(t, srv.ConnectString(), "group", "members", "/cli/group")
	require.Equal(t, 0, m.code, m.stderr.String())
	assert.Equal(t, "w1 10.0.0.1:80\n", m.stdout.String(), "w2 left when its command ended")

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	assert.Equal(t, 3, p.wait(t, 30*time.Second), "the command's status")
	children, err := zktest.Children(context.Background(), srv.ConnectString(), "/cli/group")
	require.NoError(t, err)
	assert.Empty(t, children, "the member node is deleted when the command ends")

	m = zkc(t, srv.ConnectString(), "group", "members", "/cli/no-such-group")
	assert.Equal(t, 0, m.code)
	assert.Empty(t, m.stdout.String())
}

func TestGroupUsage(t *testing.T) {
	for _, args := range [][]string{
		{"group"},
		{"group", "list", "/g"},
		{"group", "members"},
		{"group", "members", "g"},
		{"group", "join", "/g"},
		{"group", "join", "/g", "a/b", "--", "true"},
		{"group", "join", "/g", "..", "--", "true"},
		{"group", "join", "/g", "a"},
		{"group", "join", "/g", "a", "--timeout", "-1s", "--", "true"},
	} {
		p := zkc(t, "127.0.0.1:1", args...)
		assert.Equal(t, 2, p.code, "%q: %s", args, p.stderr.String())
	}
}

// group members lists a Curator GroupMember, and a Curator GroupMember sees a member that
// group join made.
func TestGroupCuratorInterop(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	tool := curatortest.Start(t, c, curatortest.WithSessionTimeout(4*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := tool.Do(ctx, "group.new j /cli/cgroup java pj")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m := zkc(t, c, "group", "members", "/cli/cgroup")
		return m.code == 0 && m.stdout.String() == "java pj\n"
	}, 20*time.Second, 100*time.Millisecond, "Curator's member not listed")

	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	p := start(t, c, "group", "join", "/cli/cgroup", "go", "--data", "pg", "--", "sh", "-c",
		fmt.Sprintf(`n=0; while [ ! -f %s ]; do n=$((n+1)); [ $n -lt 1200 ] || exit 99; sleep 0.05; done`, release))
	require.Eventually(t, func() bool {
		got, err := tool.Do(ctx, "group.members j")
		return err == nil && got == "go=pg java=pj"
	}, 30*time.Second, 50*time.Millisecond, "Curator does not see the zkcurator member")
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	assert.Equal(t, 0, p.wait(t, 30*time.Second))
	require.Eventually(t, func() bool {
		got, err := tool.Do(ctx, "group.members j")
		return err == nil && got == "java=pj"
	}, 30*time.Second, 50*time.Millisecond, "Curator still sees the member that left")
}
