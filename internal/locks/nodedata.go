package locks

import (
	"context"
	"net"
	"os"
	"sync"
)

// lookupHost resolves a host name; the package's tests replace it.
var lookupHost = net.DefaultResolver.LookupHost

// DefaultNodeData is what Curator 5.4 writes into a node created without data (its
// CuratorFrameworkFactory's default: InetAddress.getLocalHost().getHostAddress()): the
// first address the host's name resolves to, IPv4 preferred as Java does by default, or
// nothing when the name does not resolve. Lock, lease and semaphore nodes carry it unless
// the recipe is given node data, so that Go and Java holders look alike. It is looked up
// once per process.
var DefaultNodeData = sync.OnceValue(lookupLocalAddress)

func lookupLocalAddress() []byte {
	host, err := os.Hostname()
	if err != nil {
		return []byte{}
	}
	addrs, err := lookupHost(context.Background(), host)
	if err != nil || len(addrs) == 0 {
		return []byte{}
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			return []byte(a)
		}
	}
	return []byte(addrs[0])
}
