package framework_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// recordHandler is a slog.Handler that keeps the records at Warn and above.
type recordHandler struct {
	mu      *sync.Mutex
	records *[]slog.Record
}

func newRecordHandler() recordHandler {
	return recordHandler{mu: new(sync.Mutex), records: new([]slog.Record)}
}

func (h recordHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, r.Clone())
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// timeoutWarnings returns the Warn records that carry both session timeouts.
func (h recordHandler) timeoutWarnings() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, r := range *h.records {
		attrs := map[string]any{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.Any(); return true })
		if r.Level == slog.LevelWarn && attrs["requested"] != nil && attrs["negotiated"] != nil {
			out = append(out, attrs)
		}
	}
	return out
}

// TestNegotiatedSessionTimeoutWarns: a session timeout the server changed is logged at
// Warn with both values (the test server's bounds are 400 ms, 2×tickTime, and 120 s);
// one it granted as asked is not logged (asking for 100 ms must not silently give more).
func TestNegotiatedSessionTimeoutWarns(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	for _, tc := range []struct {
		ask, want time.Duration
		warn      bool
	}{
		{100 * time.Millisecond, 400 * time.Millisecond, true},
		{10 * time.Second, 10 * time.Second, false},
	} {
		h := newRecordHandler()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := framework.Connect(ctx, srv.ConnectString(), framework.WithSessionTimeout(tc.ask),
			framework.WithLogger(slog.New(h)))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got := c.NegotiatedSessionTimeout()
		c.Close()
		if got != tc.want {
			t.Fatalf("asked for %v, got %v; want %v", tc.ask, got, tc.want)
		}
		w := h.timeoutWarnings()
		if !tc.warn {
			if len(w) != 0 {
				t.Errorf("asked for %v and got it, yet warned: %v", tc.ask, w)
			}
			continue
		}
		if len(w) != 1 {
			t.Fatalf("asked for %v, got %v: %d warnings with both values, want 1", tc.ask, got, len(w))
		}
		if w[0]["requested"] != tc.ask || w[0]["negotiated"] != tc.want {
			t.Errorf("warning says requested=%v negotiated=%v, want %v and %v", w[0]["requested"], w[0]["negotiated"], tc.ask, tc.want)
		}
	}
}
