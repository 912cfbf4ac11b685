package zktest

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ContainerProvider starts a standalone ZooKeeper server in a container and returns the
// address clients connect to (host:port) and a function that removes the container. It
// returns an error wrapping ErrUnavailable when it cannot run containers here (no engine).
type ContainerProvider func() (connect string, stop func() error, err error)

var (
	containerMu       sync.Mutex
	containerProvider ContainerProvider
)

// RegisterContainerProvider makes p the last place StartServer and NewServer look for a
// ZooKeeper, after ZK_TEST_CONNECT and a local install. Package
// github.com/zoocurator/zoocurator/zktest/zkcontainer, a module of its own so that only
// those who import it download testcontainers-go and Docker's client, registers one when
// imported:
//
//	import _ "github.com/zoocurator/zoocurator/zktest/zkcontainer"
//
// A later call replaces an earlier one; nil removes it. It is safe for concurrent use.
func RegisterContainerProvider(p ContainerProvider) {
	containerMu.Lock()
	defer containerMu.Unlock()
	containerProvider = p
}

// startContainerServer runs ZooKeeper in a container through the registered provider.
// It returns an error wrapping ErrUnavailable when there is none, or it has no engine.
func startContainerServer() (*Server, error) {
	containerMu.Lock()
	p := containerProvider
	containerMu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("%w: no container provider (import zktest/zkcontainer)", ErrUnavailable)
	}
	addr, stop, err := p()
	if err != nil {
		return nil, err
	}
	if err := waitServing(context.Background(), addr, time.Minute, nil); err != nil {
		_ = stop()
		return nil, fmt.Errorf("zktest: container at %s: %w", addr, err)
	}
	return &Server{connect: addr, stopExt: stop}, nil
}
