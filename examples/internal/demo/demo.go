// Package demo holds what every example program does the same way: read -connect, start
// an embedded ZooKeeper when it is empty, connect clients, and print from several
// goroutines without mixing lines. The recipes themselves are used in each example's
// main.go, never hidden here.
package demo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// RunFunc is an example's body: it uses the ZooKeeper at connect and tells its story on
// out.
type RunFunc func(ctx context.Context, connect string, out io.Writer) error

// Main is an example's main: it takes -connect (a ZooKeeper connect string; when empty an
// embedded ZooKeeper is started for the run), runs fn with a two-minute limit and Ctrl-C
// handling, and exits non-zero on error.
func Main(fn RunFunc) {
	connect := flag.String("connect", os.Getenv("ZK_CONNECT"),
		"ZooKeeper connect string host:port[,host:port...][/chroot] (default $ZK_CONNECT); empty starts an embedded ZooKeeper")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := mainErr(ctx, *connect, fn)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func mainErr(ctx context.Context, connect string, fn RunFunc) error {
	if connect == "" {
		fmt.Fprintln(os.Stderr, "(starting an embedded ZooKeeper; pass -connect host:port to use yours)")
		srv, err := zktest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Close()
		connect = srv.ConnectString()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return fn(ctx, connect, os.Stdout)
}

// Connect connects a client to connect with a short session timeout (the examples cut
// clients off on purpose and should not wait a minute for the server to notice) and
// returns it. Close it when done.
func Connect(ctx context.Context, connect string, opts ...framework.Option) (*framework.Client, error) {
	all := append([]framework.Option{framework.WithSessionTimeout(4 * time.Second)}, opts...)
	c, err := framework.Connect(ctx, connect, all...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", connect, err)
	}
	return c, nil
}

// Proxy starts a zktest fault-injection proxy in front of the servers of connect and
// returns it with the connect string that goes through it (the chroot kept). Close it
// when done.
func Proxy(connect string) (*zktest.Proxy, string, error) {
	hosts, chroot := connect, ""
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
	}
	p, err := zktest.StartProxy(strings.Split(hosts, ",")...)
	if err != nil {
		return nil, "", err
	}
	return p, p.ConnectString() + chroot, nil
}

// Printer writes whole lines to an io.Writer from any goroutine.
type Printer struct {
	mu  sync.Mutex
	out io.Writer
}

// NewPrinter returns a Printer writing to out.
func NewPrinter(out io.Writer) *Printer { return &Printer{out: out} }

// Printf writes one formatted line (a newline is added).
func (p *Printer) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format+"\n", args...)
}
