package zktest_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// childAddrEnv tells the test binary, run again as a child, the address its registered
// container provider hands out: a real server the parent started.
const childAddrEnv = "ZKTEST_CHILD_CONTAINER_ADDR"

// TestContainerProviderIsTheLastResort runs this test binary again with no usable local
// install (ZOOKEEPER_HOME names an empty directory) and no ZK_TEST_CONNECT. There,
// StartServer reports ErrUnavailable until a container provider is registered, then
// serves what the provider starts and stops it on Close; a provider without an engine
// leaves it unavailable. The provider hands out a real server the parent started, so no
// Docker engine is needed.
func TestContainerProviderIsTheLastResort(t *testing.T) {
	if addr := os.Getenv(childAddrEnv); addr != "" {
		containerChild(t, addr)
		return
	}
	srv := zktest.NewServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestContainerProviderIsTheLastResort$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZK_TEST_CONNECT=") && !strings.HasPrefix(kv, "ZOOKEEPER_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "ZOOKEEPER_HOME="+t.TempDir(), childAddrEnv+"="+srv.ConnectString())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestContainerProviderIsTheLastResort", "the child:\n%s", out)
}

func containerChild(t *testing.T, addr string) {
	_, err := zktest.StartServer()
	require.ErrorIs(t, err, zktest.ErrUnavailable, "no install, no provider")

	stopped := 0
	zktest.RegisterContainerProvider(func() (string, func() error, error) {
		return addr, func() error { stopped++; return nil }, nil
	})
	defer zktest.RegisterContainerProvider(nil)
	s, err := zktest.StartServer()
	require.NoError(t, err)
	require.Equal(t, addr, s.ConnectString())
	require.NoError(t, s.Close())
	require.Equal(t, 1, stopped, "Close removes the container")

	zktest.RegisterContainerProvider(func() (string, func() error, error) {
		return "", nil, fmt.Errorf("%w: docker: no engine", zktest.ErrUnavailable)
	})
	_, err = zktest.StartServer()
	require.ErrorIs(t, err, zktest.ErrUnavailable, "a provider without an engine")
	require.Contains(t, err.Error(), "ZK_TEST_CONNECT", "the error says how to get a server")
}
