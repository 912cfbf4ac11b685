package framework

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/retry"
)

// Dialer dials a ZooKeeper server; go-zookeeper's zk.Dialer has the same shape.
type Dialer func(network, address string, timeout time.Duration) (net.Conn, error)

// ACLProvider chooses the ACL of each node the client creates without an explicit ACL.
type ACLProvider interface {
	// ACLForPath returns the ACL for a node at path (without namespace).
	ACLForPath(path string) []zk.ACL
}

type fixedACL []zk.ACL

func (a fixedACL) ACLForPath(string) []zk.ACL { return a }

// Option configures a Client. Options are plain values: an invalid one (a zero timeout, a
// nil policy, ...) is reported by New or Connect, as an error matching ErrInvalidArgument.
type Option func(*options)

// check makes an Option of f, whose error (the first of all options') New reports.
func check(f func(o *options) error) Option {
	return func(o *options) {
		if err := f(o); err != nil && o.err == nil {
			o.err = err
		}
	}
}

type options struct {
	sessionTimeout    time.Duration
	connectionTimeout time.Duration
	retryPolicy       retry.Policy
	namespace         string
	aclProvider       ACLProvider
	auth              []authInfo
	wire              bool // speak through our own connection (conn.go) instead of go-zookeeper's
	containers        bool
	errorPolicy       ErrorPolicy
	logger            *slog.Logger
	dialer            Dialer
	tls               *tls.Config   // nil: plain TCP (WithTLS)
	tracking          *bool         // nil: the default (WithEnsembleTracking)
	configPoll        time.Duration // the tracker's poll interval (tests); 0: configPollInterval
	expiryFraction    float64
	maxPacket         int
	requestHook       func(op string)
	requestObservers  []func(RequestInfo)
	stateListeners    []func(State)
	circuitBreaking   retry.Policy // every listener behind a circuit breaker (circuit.go)
	lockObservers     []func(LockInfo)
	cleanupTimeout    time.Duration
	err               error // the first invalid option's (check)
}

type authInfo struct {
	scheme string
	auth   []byte
}

// DefaultMaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff bytes).
const DefaultMaxPacketSize = 0xfffff

// packetOverhead is what a request adds to its data and path (headers, ACLs, framing).
const packetOverhead = 512

func defaultOptions() options {
	return options{
		sessionTimeout:    DefaultSessionTimeout,
		connectionTimeout: 15 * time.Second,
		retryPolicy:       retry.Default(),
		aclProvider:       fixedACL(zk.WorldACL(zk.PermAll)),
		containers:        true,
		errorPolicy:       StandardErrorPolicy,
		logger:            slog.New(slog.DiscardHandler),
		dialer:            net.DialTimeout,
		expiryFraction:    1.0,
		maxPacket:         DefaultMaxPacketSize,
		cleanupTimeout:    30 * time.Second,
		wire:              os.Getenv(connEnv) == "wire",
	}
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("framework: %w: %s must be positive, got %v", ErrInvalidArgument, name, d)
	}
	return nil
}

// DefaultSessionTimeout is the session timeout a client asks for unless told otherwise:
// 30 s, which a stock server (tickTime 2 s, bounds 4–40 s) grants as asked. Curator asks
// for 60 s, which such a server cuts to 40 s.
const DefaultSessionTimeout = 30 * time.Second

// WithSessionTimeout sets the session timeout the client asks for. The default is
// DefaultSessionTimeout (30 s). The server grants a value within its bounds, by default
// [2, 20] × its tickTime (4–40 s with the stock tickTime of 2 s); a granted value that
// differs from the one asked for is logged at Warn with both, and
// Client.NegotiatedSessionTimeout returns it. It is how long the server keeps the
// session, its ephemeral nodes (locks, leadership, registrations) and its watches after
// it last heard from the client: what a crashed holder costs others, and how long a
// stalled process (a GC pause, a stopped VM) may go silent before it loses its leases.
// For locks and leaders 4–15 s is a usual choice; see the package doc.
func WithSessionTimeout(d time.Duration) Option {
	return check(func(o *options) error { o.sessionTimeout = d; return positive("session timeout", d) })
}

// WithConnectionTimeout sets how long an operation waits for a connection before it fails
// with a connection loss (which the retry policy may retry). It also bounds each attempt
// to connect to a server, from the dial to the server's answer, to this or to the session
// timeout divided by the number of servers, whichever is shorter (as ZooKeeper's Java
// client does): a server that accepts connections but does not answer (a hung machine)
// is left for the next one while the session can still be saved. The default is 15 s.
func WithConnectionTimeout(d time.Duration) Option {
	return check(func(o *options) error { o.connectionTimeout = d; return positive("connection timeout", d) })
}

// WithRetryPolicy sets the retry policy of every operation. The default is
// retry.Default(): bounded exponential backoff from 100 ms up to 5 s, 10 retries.
func WithRetryPolicy(p retry.Policy) Option {
	return check(func(o *options) error {
		if p == nil {
			return fmt.Errorf("framework: %w: nil retry policy", ErrInvalidArgument)
		}
		o.retryPolicy = p
		return nil
	})
}

// WithNamespace prefixes every path with /namespace (Curator's namespace). The namespace
// node, with its missing parents (and the chroot), is created as a persistent node before
// the client's first operation, as Curator's namespace facade does, so that operations
// work on a fresh server; after that no operation pays for it. The default is none.
func WithNamespace(ns string) Option {
	return check(func(o *options) error {
		if ns != "" {
			if err := ValidatePath("/" + ns); err != nil {
				return fmt.Errorf("framework: namespace %q: %w", ns, err)
			}
		}
		o.namespace = ns
		return nil
	})
}

// WithACL sets the ACL of nodes created without an explicit one. The default is
// world:anyone with all permissions (zk.WorldACL(zk.PermAll)).
func WithACL(acl []zk.ACL) Option {
	return check(func(o *options) error {
		if len(acl) == 0 {
			return fmt.Errorf("framework: %w: empty ACL", ErrInvalidArgument)
		}
		o.aclProvider = fixedACL(acl)
		return nil
	})
}

// WithACLProvider chooses the ACL per path for nodes created without an explicit one.
func WithACLProvider(p ACLProvider) Option {
	return check(func(o *options) error {
		if p == nil {
			return fmt.Errorf("framework: %w: nil ACL provider", ErrInvalidArgument)
		}
		o.aclProvider = p
		return nil
	})
}

// WithAuth adds authentication (e.g. scheme "digest", auth "user:password"), sent on every
// connection. The default is none.
func WithAuth(scheme string, auth []byte) Option {
	return check(func(o *options) error {
		if scheme == "" {
			return fmt.Errorf("framework: %w: empty auth scheme", ErrInvalidArgument)
		}
		o.auth = append(o.auth, authInfo{scheme, append([]byte(nil), auth...)})
		return nil
	})
}

// WithContainers says whether parents created with the create option
// WithContainerParents (what recipes use for their own parents) are container nodes,
// which the server deletes once their last child is gone; off makes them persistent.
// Parents made with WithParents are always persistent. The default is true, as Curator's.
func WithContainers(on bool) Option {
	return check(func(o *options) error { o.containers = on; return nil })
}

// WithErrorPolicy sets which connection states end a recipe's lease. The default is
// StandardErrorPolicy (Suspended or Lost).
func WithErrorPolicy(p ErrorPolicy) Option {
	return check(func(o *options) error {
		if p != StandardErrorPolicy && p != SessionErrorPolicy {
			return fmt.Errorf("framework: %w: unknown error policy %d", ErrInvalidArgument, p)
		}
		o.errorPolicy = p
		return nil
	})
}

// WithLogger sets the logger. The default discards.
func WithLogger(l *slog.Logger) Option {
	return check(func(o *options) error {
		if l == nil {
			return fmt.Errorf("framework: %w: nil logger", ErrInvalidArgument)
		}
		o.logger = l
		return nil
	})
}

// WithDialer sets how the client dials servers (e.g. through a proxy). The client bounds
// the handshake on the connections it returns (see WithConnectionTimeout). The default is
// net.DialTimeout.
func WithDialer(d Dialer) Option {
	return check(func(o *options) error {
		if d == nil {
			return fmt.Errorf("framework: %w: nil dialer", ErrInvalidArgument)
		}
		o.dialer = d
		return nil
	})
}

// WithSimulatedExpiry sets the fraction of the negotiated session timeout after which a
// client that stays Suspended reports Lost. The default is 1.0 (Curator's 100 %); it must
// be in (0, 1].
func WithSimulatedExpiry(fraction float64) Option {
	return check(func(o *options) error {
		if !(fraction > 0 && fraction <= 1) {
			return fmt.Errorf("framework: %w: simulated expiry fraction %v not in (0, 1]", ErrInvalidArgument, fraction)
		}
		o.expiryFraction = fraction
		return nil
	})
}

// WithMaxPacketSize sets the server's packet limit (its jute.maxbuffer). Requests whose
// data and path (and a create's ACL) would exceed it fail with ErrDataTooLarge before
// sending. The default is
// DefaultMaxPacketSize.
func WithMaxPacketSize(n int) Option {
	return check(func(o *options) error {
		if n <= packetOverhead {
			return fmt.Errorf("framework: %w: max packet size %d too small", ErrInvalidArgument, n)
		}
		o.maxPacket = n
		return nil
	})
}

// WithRequestHook calls hook (with the operation's name, e.g. "create") for every request
// the client sends to ZooKeeper, retries included (but the ensemble tracker's reads, see
// WithEnsembleTracking): a small metrics hook. Client.Requests counts them too. The hook must be fast and must not block. WithRequestObserver also
// gives each request's path, duration and error.
func WithRequestHook(hook func(op string)) Option {
	return check(func(o *options) error { o.requestHook = hook; return nil })
}
