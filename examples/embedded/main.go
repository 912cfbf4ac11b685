// Command embedded starts an embedded ZooKeeper (or uses the one named by -connect),
// connects to it and shows a few plain operations. It is what `make demo` runs until the
// recipe examples land.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/zktest"
)

func main() {
	connect := flag.String("connect", "", "ZooKeeper connect string; empty starts an embedded server")
	flag.Parse()
	if err := run(*connect); err != nil {
		log.Fatal(err)
	}
}

func run(connect string) error {
	if connect == "" {
		fmt.Fprintln(os.Stderr, "starting an embedded ZooKeeper...")
		srv, err := zktest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Close()
		connect = srv.ConnectString()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zktest.Dial(ctx, connect, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Printf("connected to %s, session 0x%x\n", connect, conn.SessionID())
	p, err := conn.Create("/demo-", []byte("hello"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return err
	}
	fmt.Printf("created %s\n", p)
	return nil
}
