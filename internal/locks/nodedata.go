package locks

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

const (
	// lookupTimeout bounds one lookup of the host's address.
	lookupTimeout = 2 * time.Second
	// lookupRetry is how long a failed lookup is remembered before the next call looks
	// the address up again.
	lookupRetry = 30 * time.Second
)

// localAddr is the process's lookup of its address, started at package use.
var localAddr = newLocalAddress(net.DefaultResolver.LookupHost)

func init() { localAddr.get() }

// DefaultNodeData returns what Curator 5.4 writes into a node created without data (its
// CuratorFrameworkFactory's default: InetAddress.getLocalHost().getHostAddress()): the
// first address the host's name resolves to, IPv4 preferred as Java does by default, or
// nothing when the name does not resolve, which is also Curator's fallback. Lock, lease
// and semaphore nodes carry it unless the recipe is given node data, so that Go and Java
// holders look alike.
//
// It never waits: the address is looked up in the background (from the package's first
// use, each lookup bounded by 2 s), and until a lookup has found it DefaultNodeData
// returns the fallback, no data. A failed lookup is tried again, 30 s later, on the next
// call; a found address is kept for the process's life, as Curator keeps it.
func DefaultNodeData() []byte { return localAddr.get() }

// WaitDefaultNodeData waits until no lookup of the address is under way (one is started
// if it is due), or ctx ends, and returns DefaultNodeData then: for tests that compare
// node data with the host's address.
func WaitDefaultNodeData(ctx context.Context) ([]byte, error) {
	localAddr.get()
	if err := localAddr.settle(ctx); err != nil {
		return nil, err
	}
	return localAddr.get(), nil
}

// localAddress looks the host's address up in the background and remembers it once
// found.
type localAddress struct {
	lookup func(ctx context.Context, host string) ([]string, error)

	mu      sync.Mutex
	value   []byte        // the address, once found
	found   bool          // value is set
	running chan struct{} // closed when the lookup under way ends; nil when none is
	retryAt time.Time     // a failed lookup is not tried again before this
}

func newLocalAddress(lookup func(ctx context.Context, host string) ([]string, error)) *localAddress {
	return &localAddress{lookup: lookup}
}

// get returns the address when found, else no data after starting a lookup if none is
// under way and the last failure is old enough.
func (a *localAddress) get() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.found {
		return a.value
	}
	if a.running == nil && !time.Now().Before(a.retryAt) {
		done := make(chan struct{})
		a.running = done
		go a.run(done)
	}
	return []byte{}
}

func (a *localAddress) run(done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	v, err := resolveLocalAddress(ctx, a.lookup)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running = nil
	if err != nil {
		a.retryAt = time.Now().Add(lookupRetry)
		return
	}
	a.value, a.found = v, true
}

// settle waits until no lookup is under way, or ctx ends.
func (a *localAddress) settle(ctx context.Context) error {
	a.mu.Lock()
	done := a.running
	a.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errNoAddress = errors.New("locks: the host name resolves to no address")

// resolveLocalAddress returns the first address the host's name resolves to, IPv4
// preferred, as Java's InetAddress.getLocalHost().getHostAddress().
func resolveLocalAddress(ctx context.Context, lookup func(ctx context.Context, host string) ([]string, error)) ([]byte, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, errNoAddress
	}
	for _, s := range addrs {
		if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
			return []byte(s), nil
		}
	}
	return []byte(addrs[0]), nil
}
