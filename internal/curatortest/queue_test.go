package curatortest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
)

// QueueDriver answers the tool's protocol: its own commands, errors as CommandError, and
// a queue that a Curator producer fills and a Curator consumer empties.
func TestQueueDriver(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	q := curatortest.StartQueueDriver(t, connect, curatortest.WithName("queues"))
	assert.Equal(t, "pong", do(t, ctx, q, "ping"))
	assert.Equal(t, q.SessionID(), do(t, ctx, q, "session"))

	var cerr *curatortest.CommandError
	_, err := q.Do(ctx, "q.new p fifo /it/queue - produce")
	require.ErrorAs(t, err, &cerr)
	assert.Contains(t, cerr.Message, "unknown kind")
	_, err = q.Do(ctx, "mutex.new m /it/m")
	require.ErrorAs(t, err, &cerr, "CuratorTool's commands are not QueueDriver's")

	do(t, ctx, q, "q.new p plain /it/queue - produce")
	do(t, ctx, q, "q.put p one")
	do(t, ctx, q, "q.putmulti p two,three")
	do(t, ctx, q, "q.new c plain /it/queue - consume")
	for _, want := range []string{"one", "two", "three"} {
		got := do(t, ctx, q, "q.take c 20000")
		assert.Regexp(t, "^"+want+"@[0-9]+$", got)
	}
	assert.Equal(t, "-", do(t, ctx, q, "q.take c 10"))
	do(t, ctx, q, "q.close c")
	do(t, ctx, q, "q.close p")
	do(t, ctx, q, "sq.offer /it/simple hello")
	assert.Equal(t, "hello", do(t, ctx, q, "sq.peek /it/simple"))
	assert.Equal(t, "hello", do(t, ctx, q, "sq.take /it/simple 1000"))
	assert.Equal(t, "-", do(t, ctx, q, "sq.take /it/simple 10"))
}
