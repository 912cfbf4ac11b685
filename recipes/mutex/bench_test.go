package mutex_test

import (
	"context"
	"testing"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// BenchmarkAcquireRelease measures one uncontended lock cycle against a real server; run
// it with -benchmem for the client-side allocations of a cycle:
//
//	go test -run '^$' -bench AcquireRelease -benchmem ./recipes/mutex
func BenchmarkAcquireRelease(b *testing.B) {
	srv := zktest.NewServer(b)
	c := testutil.Connect(b, srv.ConnectString())
	m, err := mutex.New(c, "/bench/mutex")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	before := c.Requests()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := m.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.Requests()-before)/float64(b.N), "requests/op")
}
