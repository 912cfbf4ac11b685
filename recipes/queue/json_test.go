package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

type job struct {
	ID   int      `json:"id"`
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
}

// JSON[T] turns items into JSON as Java's Jackson writes it (no HTML escaping, no
// trailing newline) and back; bytes that are not a T's JSON are refused with an error
// that says so.
func TestJSONSerializer(t *testing.T) {
	var s queue.JSON[job]
	b, err := s.Serialize(job{ID: 7, Name: "a<b>&c", Tags: []string{"é"}})
	require.NoError(t, err)
	assert.Equal(t, `{"id":7,"name":"a<b>&c","tags":["é"]}`, string(b))
	got, err := s.Deserialize(b)
	require.NoError(t, err)
	assert.Equal(t, job{ID: 7, Name: "a<b>&c", Tags: []string{"é"}}, got)
	for _, bad := range []string{"", "seven", `{"id":"seven"}`, `{"id":7} trailing`, `[1,2]`} {
		_, err := s.Deserialize([]byte(bad))
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "queue: JSON", "%q", bad)
		assert.Contains(t, err.Error(), "queue_test.job", "the error names the type: %q", bad)
	}
	_, err = queue.JSON[func()]{}.Serialize(func() {})
	assert.Error(t, err, "a value JSON cannot hold is refused, not a panic")
}

// A queue of JSON items: put and taken as they were (PutMulti too); a node another writer
// put whose bytes are not a job's JSON is skipped, left in place and reported as a
// *BadItemError matching ErrNotAnItem, naming the node and JSON's complaint.
func TestJSONQueue(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	path := uniq("/json") + "/q"
	var l listener
	q, err := queue.New(c, path, queue.JSON[job]{}, queue.WithErrorListener(l.report))
	require.NoError(t, err)
	raw, err := queue.New(c, path, queue.String{})
	require.NoError(t, err)
	junk, err := raw.Put(ctx, "not json")
	require.NoError(t, err)
	_, err = q.Put(ctx, job{ID: 1, Name: "one"})
	require.NoError(t, err)
	_, err = q.PutMulti(ctx, []job{{ID: 2, Name: "two"}, {ID: 3, Name: "three", Tags: []string{"x"}}})
	require.NoError(t, err)
	var got []job
	for range 2 {
		require.NoError(t, q.ConsumeOne(ctx, func(_ context.Context, j job) error { got = append(got, j); return nil }))
	}
	assert.Equal(t, []job{{ID: 1, Name: "one"}, {ID: 2, Name: "two"}, {ID: 3, Name: "three", Tags: []string{"x"}}}, got)
	l.mu.Lock()
	require.NotEmpty(t, l.errs)
	err = l.errs[0]
	l.mu.Unlock()
	var be *queue.BadItemError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, junk, be.Path)
	assert.ErrorIs(t, err, queue.ErrNotAnItem)
	assert.Contains(t, err.Error(), "queue: JSON")
	names, err := q.Items(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{junk[len(path)+1:]}, names, "the bad node is left in place")

	// The simple queue: Take reports the bad node when nothing else came.
	sq, err := queue.NewSimple(c, uniq("/json")+"/simple", queue.JSON[job]{})
	require.NoError(t, err)
	sraw, err := queue.NewSimple(c, sq.Path(), queue.String{})
	require.NoError(t, err)
	_, err = sraw.Offer(ctx, "{")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = sq.Take(short)
	cancel()
	assert.True(t, errors.Is(err, queue.ErrNotAnItem) && errors.Is(err, context.DeadlineExceeded), "%v", err)
	_, err = sq.Offer(ctx, job{ID: 4})
	require.NoError(t, err)
	j, err := sq.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, job{ID: 4}, j)
}
