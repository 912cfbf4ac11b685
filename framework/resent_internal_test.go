package framework

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// Which failed attempts make a write sent again meet a possible attempt of its own:
// a connection loss and a context that ended while the request was in
// flight may have let it through; ErrNoServer (go-zookeeper never sent it) and a
// SessionMoved answer (the server refused it: ZooKeeper turns a request of a moved
// session into an error, it applies nothing) did not.
func TestResentNotesOnlyAttemptsThatMayHaveApplied(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{zk.ErrConnectionClosed, true},
		{fmt.Errorf("%w (session replaced)", zk.ErrConnectionClosed), true},
		{context.Canceled, true},
		{context.DeadlineExceeded, true},
		{zk.ErrNoServer, false},
		{zk.ErrSessionMoved, false},
		{zk.ErrNodeExists, false},
		{zk.ErrSessionExpired, false},
		{ErrClosed, false},
	} {
		var r resent
		r.note(tc.err)
		assert.Equal(t, tc.want, bool(r), "%v", tc.err)
		got := r.unknownIf(zk.ErrNodeExists, zk.ErrNodeExists)
		assert.Equal(t, tc.want, errors.Is(got, ErrUnknownOutcome), "NodeExists after %v", tc.err)
	}
}
