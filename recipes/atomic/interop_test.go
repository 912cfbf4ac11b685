package atomic_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// Go and Curator increment one DistributedAtomicLong together, 1 000 times in all: it ends
// at exactly the sum, and each side reads the other's value.
func TestInteropCurator(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curatortest.Start(t, srv.ConnectString(), curatortest.WithSessionTimeout(4*time.Second))
	ctx := testutil.Context(t, 4*time.Minute)
	const path = "/interop/along"
	do := func(format string, args ...any) string {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		out, err := tool.Do(cctx, format, args...)
		require.NoError(t, err, format, args)
		return out
	}

	// Curator increments, Go reads; Go increments, Curator reads.
	do("along.new j %s", path)
	do("along.add j 5 1")
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	policy, err := retry.NewNTimes(1000, time.Millisecond)
	require.NoError(t, err)
	l, err := atomic.NewLong(c, path, atomic.WithRetryPolicy(policy))
	require.NoError(t, err)
	r, err := l.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(5), r.Post)
	_, err = l.Add(ctx, -5)
	require.NoError(t, err)
	assert.Equal(t, "0", do("along.get j"))

	// Together: Curator 500 in a JVM thread, Go 500 in two goroutines.
	const javaN, goN = 500, 250
	curator := testutil.Go(ctx, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		_, err := tool.Do(cctx, "along.add j 1 %d", javaN)
		return err
	})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < goN; {
				r, err := l.Increment(ctx)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", g, err)
					return
				}
				if r.Succeeded {
					done++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.NoError(t, testutil.Result(t, curator, 3*time.Minute, "Curator's increments"))
	want := int64(javaN + 2*goN)
	r, err = l.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, r.Post)
	assert.Equal(t, strconv.FormatInt(want, 10), do("along.get j"))
}
