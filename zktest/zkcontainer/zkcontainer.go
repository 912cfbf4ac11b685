// Package zkcontainer lets package zktest start ZooKeeper in a Docker container (image
// zookeeper:3.8, through testcontainers-go) when neither ZK_TEST_CONNECT nor a local
// install is available. Import it for its side effect, in a test file:
//
//	import _ "github.com/zoocurator/zoocurator/zktest/zkcontainer"
//
// It is a module of its own: testcontainers-go and Docker's client (some fifty modules)
// are downloaded only by those who import it, never by users of the recipes or of zktest
// alone. Container servers are standalone; they cannot be stopped, restarted or paused
// by zktest's fault-injection methods (ErrUnsupported).
package zkcontainer

import (
	"context"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/zoocurator/zoocurator/zktest"
)

// Image is the container image started.
const Image = "zookeeper:3.8"

func init() { zktest.RegisterContainerProvider(Start) }

// Start runs ZooKeeper in a container when a Docker engine answers, and returns its
// address and a function that removes the container. It returns an error wrapping
// zktest.ErrUnavailable when there is no engine. zktest calls it; it is exported for
// programs that want a container explicitly.
func Start() (connect string, stop func() error, err error) {
	// testcontainers panics in some set-ups without an engine; report that as unavailable.
	defer func() {
		if r := recover(); r != nil {
			connect, stop, err = "", nil, fmt.Errorf("%w: docker: %v", zktest.ErrUnavailable, r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provider, perr := testcontainers.ProviderDocker.GetProvider()
	if perr != nil {
		return "", nil, fmt.Errorf("%w: docker: %v", zktest.ErrUnavailable, perr)
	}
	defer provider.Close()
	hctx, hcancel := context.WithTimeout(ctx, 3*time.Second)
	herr := provider.Health(hctx)
	hcancel()
	if herr != nil {
		return "", nil, fmt.Errorf("%w: docker: %v", zktest.ErrUnavailable, herr)
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        Image,
			ExposedPorts: []string{"2181/tcp"},
			Env: map[string]string{
				"ZOO_4LW_COMMANDS_WHITELIST": "*",
				"ZOO_TICK_TIME":              "200",
				"ZOO_CFG_EXTRA":              "extendedTypesEnabled=true znode.container.checkIntervalMs=1000 forceSync=no minSessionTimeout=400 maxSessionTimeout=120000",
			},
			WaitingFor: wait.ForListeningPort("2181/tcp").WithStartupTimeout(90 * time.Second),
		},
		Started: true,
	})
	if err != nil {
		return "", nil, fmt.Errorf("zkcontainer: start %s: %w", Image, err)
	}
	terminate := func() error { return c.Terminate(context.Background()) }
	host, err := c.Host(ctx)
	if err != nil {
		_ = terminate()
		return "", nil, fmt.Errorf("zkcontainer: %s: %w", Image, err)
	}
	port, err := c.MappedPort(ctx, "2181/tcp")
	if err != nil {
		_ = terminate()
		return "", nil, fmt.Errorf("zkcontainer: %s: %w", Image, err)
	}
	return host + ":" + port.Port(), terminate, nil
}
