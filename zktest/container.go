package zktest

import (
	"context"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// containerImage is the image used when a Docker engine is the only source of ZooKeeper.
const containerImage = "zookeeper:3.8"

// startContainerServer runs ZooKeeper in a container when a Docker engine answers.
// It returns an error wrapping ErrUnavailable when there is no engine.
func startContainerServer() (s *Server, err error) {
	// testcontainers panics in some set-ups without an engine; report that as unavailable.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w: docker: %v", ErrUnavailable, r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provider, perr := testcontainers.ProviderDocker.GetProvider()
	if perr != nil {
		return nil, fmt.Errorf("%w: docker: %v", ErrUnavailable, perr)
	}
	defer provider.Close()
	hctx, hcancel := context.WithTimeout(ctx, 3*time.Second)
	herr := provider.Health(hctx)
	hcancel()
	if herr != nil {
		return nil, fmt.Errorf("%w: docker: %v", ErrUnavailable, herr)
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        containerImage,
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
		return nil, fmt.Errorf("zktest: start container %s: %w", containerImage, err)
	}
	host, err := c.Host(ctx)
	if err == nil {
		var port string
		if p, perr := c.MappedPort(ctx, "2181/tcp"); perr == nil {
			port = p.Port()
		} else {
			err = perr
		}
		if err == nil {
			addr := host + ":" + port
			if err = waitServing(addr, time.Minute, nil); err == nil {
				return &Server{connect: addr, stopExt: func() error {
					return c.Terminate(context.Background())
				}}, nil
			}
		}
	}
	_ = c.Terminate(context.Background())
	return nil, fmt.Errorf("zktest: container %s: %w", containerImage, err)
}
