package zktest

import "errors"

var (
	// ErrUnavailable is returned when no ZooKeeper can be started or reached.
	// The error that wraps it says how to get one.
	ErrUnavailable = errors.New("zktest: no ZooKeeper available")
	// ErrUnsupported is returned by fault-injection methods on a server this package does
	// not control (one named by ZK_TEST_CONNECT, or a container).
	ErrUnsupported = errors.New("zktest: operation not supported for this server")
	// ErrPortInUse is returned by StartStandalone with WithPort when something already
	// listens on that port; no server was started.
	ErrPortInUse = errors.New("zktest: port in use")
	// ErrClosed is returned when a server, ensemble or proxy is used after Close.
	ErrClosed = errors.New("zktest: closed")
)

// howToGet says how to make a ZooKeeper available to this package.
const howToGet = `zktest: no ZooKeeper server found. Any one of these works:
  - run 'make deps' (installs Java and Debian's zookeeper package with apt-get), or
    'apt-get install default-jre-headless zookeeper' yourself;
  - set ZOOKEEPER_HOME to an unpacked ZooKeeper 3.8 release (java on PATH or JAVA_HOME);
  - set ZK_TEST_CONNECT=host:port[,host:port...] to use a running server or ensemble;
  - have a Docker engine running, and import _ "github.com/zoocurator/zoocurator/zktest/zkcontainer"
    in a test file (a module of its own: a zookeeper:3.8 container through testcontainers-go).`
