package framework

import (
	"context"
	"errors"
	"fmt"
)

// ErrSessionChanged is the error of a request made with a context from InSession once the
// client no longer holds that session: the request was not sent (again). When an earlier
// attempt of the same call went out and may have been applied (a connection loss took
// its answer), the error matches ErrUnknownOutcome too; otherwise nothing was applied.
var ErrSessionChanged = errors.New("framework: the session the request is bound to has ended: not sent in another")

type sessionKey struct{}

// sessionBinding is what InSession stores in a context.
type sessionBinding struct {
	gen uint64
	sid int64
}

// InSession returns a copy of ctx that binds the requests made with it to one session:
// the one the client held in generation gen with id sessionID (as Client.Session returns
// them together). Each attempt of such a request (the first, and each one the retry policy
// makes after a connection loss) is sent only while the client still holds that session;
// once the generation or the session id differs, the call fails with an error matching
// ErrSessionChanged (and ErrUnknownOutcome when an earlier attempt went out: see
// ErrSessionChanged) rather than being sent in the new session.
//
// A recipe uses it for a write that is bound to what its session holds, such as a
// transaction that deletes its own ephemeral lock node by path: sent in a new session, the
// node at that path may be another client's. It narrows, but cannot close, one gap:
// go-zookeeper queues a request the client hands it just as its connection drops, and
// sends it after it reconnects, in a new session if the old one expired meanwhile; the
// check is made as the request is handed over.
func InSession(ctx context.Context, gen uint64, sessionID int64) context.Context {
	return context.WithValue(ctx, sessionKey{}, sessionBinding{gen: gen, sid: sessionID})
}

// checkSession returns an error matching ErrSessionChanged when ctx is bound (InSession)
// to a session other than the one the client and conn hold now; sent says an earlier
// attempt of the same call went out.
func (c *Client) checkSession(ctx context.Context, conn zkConn, sent bool) error {
	b, ok := ctx.Value(sessionKey{}).(sessionBinding)
	if !ok {
		return nil
	}
	gen, sid := c.Session()
	if gen == b.gen && sid == b.sid && sid != 0 && conn.SessionID() == sid {
		return nil
	}
	err := fmt.Errorf("%w (session 0x%x of generation %d; now 0x%x, generation %d)", ErrSessionChanged, b.sid, b.gen, sid, gen)
	if sent {
		return &unknownOutcomeError{err: err}
	}
	return err
}
