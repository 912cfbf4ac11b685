package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// StandaloneOption configures StartStandalone.
type StandaloneOption func(*standaloneOptions)

type standaloneOptions struct {
	use    string    // servers to use instead of starting one ("": start one)
	notice io.Writer // where to say that a server is being started (nil: nowhere)
	place  serverPlace
	local  bool       // WithPort, WithDataDir or WithSASLDigestUsers: start one from a local install, whatever the rest
	sasl   *saslSetup // WithSASLDigestUsers (nil: no SASL)
}

// UseServers makes StartStandalone start nothing when connect is not empty: the Server it
// returns names those servers (connect is a client's connect string,
// host:port[,host:port...][/chroot], returned as is by ConnectString), is not
// Controllable, and its Close leaves them running. It is what a program's -connect flag
// needs: given, the user's ZooKeeper; empty, one started for the run.
func UseServers(connect string) StandaloneOption {
	return func(o *standaloneOptions) { o.use = strings.TrimSpace(connect) }
}

// WithStartNotice makes StartStandalone write one line to w when it starts a server (not
// when it uses servers named by UseServers or ZK_TEST_CONNECT), so that the user of a
// program knows where the ZooKeeper it talks to comes from.
func WithStartNotice(w io.Writer) StandaloneOption {
	return func(o *standaloneOptions) { o.notice = w }
}

// WithPort makes StartStandalone start its server on port of 127.0.0.1 instead of a free
// port (0, the default, is a free one). When something listens there already it starts
// nothing and returns an error wrapping ErrPortInUse. A server asked for a port is one
// started from a local install: ZK_TEST_CONNECT and containers are not used.
func WithPort(port int) StandaloneOption {
	return func(o *standaloneOptions) { o.place.port, o.local = port, true }
}

// WithDataDir makes StartStandalone keep its server's files in dir (created if missing;
// "" is a temporary directory, the default, removed by Close): the data in dir/data, zoo.cfg, and the server's
// output in server.out. Close leaves dir, so a server started again on it finds the
// nodes it had. A server given a data directory is one started from a local install:
// ZK_TEST_CONNECT and containers are not used.
func WithDataDir(dir string) StandaloneOption {
	return func(o *standaloneOptions) { o.place.dir, o.local = dir, true }
}

// StartStandalone starts a standalone server (or finds one, see the package doc) and
// waits until it answers, or until ctx ends. The caller must Close it. It is the entry
// point for a program that has no testing.T — an example, a demo, a benchmark:
//
//	connect := flag.String("connect", "", "ZooKeeper host:port; empty: start one for this run")
//	flag.Parse()
//	srv, err := zktest.StartStandalone(ctx, zktest.UseServers(*connect))
//	if err != nil { ... }
//	defer srv.Close()
//	client, err := framework.Connect(ctx, srv.ConnectString())
//
// StartServer is StartStandalone without options or deadline; NewServer is the same for
// a test, closed at the test's end.
func StartStandalone(ctx context.Context, opts ...StandaloneOption) (*Server, error) {
	var o standaloneOptions
	for _, opt := range opts {
		opt(&o)
	}
	local := o.local
	if o.use != "" && local {
		return nil, errors.New("zktest: UseServers names servers to use; WithPort, WithDataDir and WithSASLDigestUsers are for one started here")
	}
	if o.sasl != nil {
		if err := o.sasl.check(); err != nil {
			return nil, err
		}
	}
	if o.use != "" {
		return &Server{connect: o.use, external: true}, nil
	}
	if o.place.port < 0 || o.place.port > 65535 {
		return nil, fmt.Errorf("zktest: WithPort(%d): want 1-65535, or 0 for a free port", o.place.port)
	}
	if local {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if o.place.port != 0 { // said first: whatever else is missing, this port will not do
			if err := checkPortFree(o.place.port); err != nil {
				return nil, err
			}
		}
		inst, err := findInstall()
		if err != nil {
			return nil, fmt.Errorf("%w (WithPort, WithDataDir and WithSASLDigestUsers need a local install)\n%s", err, howToGet)
		}
		if o.notice != nil {
			fmt.Fprintln(o.notice, "(starting a ZooKeeper for this run)")
		}
		return startLocalServer(ctx, inst, o.place, localExtras{sasl: o.sasl})
	}
	if connect := os.Getenv("ZK_TEST_CONNECT"); connect != "" {
		return &Server{connect: connect, external: true}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inst, err := findInstall()
	if err == nil {
		if o.notice != nil {
			fmt.Fprintln(o.notice, "(no ZooKeeper given: starting one for this run)")
		}
		return startLocalServer(ctx, inst, o.place, localExtras{sasl: o.sasl})
	}
	if o.notice != nil {
		fmt.Fprintln(o.notice, "(no ZooKeeper given: starting one in a container for this run)")
	}
	if s, cerr := startContainerServer(); cerr == nil {
		return s, nil
	} else if !errors.Is(cerr, ErrUnavailable) {
		return nil, cerr
	}
	return nil, fmt.Errorf("%w (%v)\n%s", ErrUnavailable, err, howToGet)
}
