package sharedcount_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

const listenerPanicChildEnv = "ZOOCURATOR_SC_LISTENER_PANIC_CHILD"

// TestCountListenerPanicRecovered: a listener that panics must not take the process down
// (the latch, the caches, the queue consumers and the client's state listeners recover a
// listener's panic and log it); the other listeners go on hearing the count. Run in a
// child process so that the crash is seen, not suffered.
func TestCountListenerPanicRecovered(t *testing.T) {
	if connect := os.Getenv(listenerPanicChildEnv); connect != "" {
		countListenerPanicChild(t, connect)
		return
	}
	srv := zktest.NewServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCountListenerPanicRecovered$", "-test.count=1")
	cmd.Env = append(os.Environ(), listenerPanicChildEnv+"="+srv.ConnectString())
	out, err := cmd.CombinedOutput()
	text := string(out)
	if i := strings.Index(text, "panic:"); i >= 0 {
		text = text[i:min(len(text), i+400)]
	}
	require.NoError(t, err, "the process died of a listener's panic:\n%s", text)
}

func countListenerPanicChild(t *testing.T, connect string) {
	c := testutil.ConnectFailFast(t, connect)
	other := testutil.ConnectFailFast(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	const path = "/counts/listenerpanic"
	sc, err := sharedcount.New(c, path, 0)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	defer func() { _ = sc.Close() }()
	heard := make(chan int32, 8)
	sc.AddListener(func(sharedcount.Versioned[int32], error) { panic("a listener panics") })
	sc.AddListener(func(v sharedcount.Versioned[int32], err error) {
		if err == nil {
			heard <- v.Value
		}
	})
	for _, n := range []int32{1, 2} {
		_, err := other.SetData(ctx, path, sharedcount.Encode(n), -1)
		require.NoError(t, err)
		for {
			select {
			case v := <-heard:
				if v != n {
					continue
				}
			case <-ctx.Done():
				t.Fatalf("the other listener did not hear %d", n)
			}
			break
		}
	}
}
