package reliability_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/zktest"
)

var (
	ens      *zktest.Ensemble
	soakFor  = flag.Duration("soak", 0, "run the soak test for this long (make soak); 0 runs one round per fault")
	soakSeed = flag.Int64("soak.seed", 1, "seed of the soak test's choice of recipes and faults")
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	if os.Getenv(queueChildEnv) != "" {
		os.Exit(queueChildMain())
	}
	flag.Parse()
	e, err := zktest.StartEnsemble(3, zktest.WithPeerProxies())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if testing.Short() {
			fmt.Fprintln(os.Stderr, "reliability: skipped under -short: no ZooKeeper ensemble")
			os.Exit(0)
		}
		os.Exit(1)
	}
	ens = e
	start := time.Now()
	code := m.Run()
	removeZkcuratorBinary()
	e.Close()
	fmt.Fprintf(os.Stderr, "reliability: suite ran %v\n", time.Since(start).Round(time.Second))
	os.Exit(code)
}
