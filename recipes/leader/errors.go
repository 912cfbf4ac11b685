package leader

import "errors"

var (
	// ErrClosed is returned by a Latch or Selector used after Close.
	ErrClosed = errors.New("leader: closed")
	// ErrNotStarted is returned by Await and Requeue before Start.
	ErrNotStarted = errors.New("leader: not started")
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = errors.New("leader: already started")
	// ErrNotLeader is returned by Latch.Term and Latch.Token when this participant does
	// not hold leadership now.
	ErrNotLeader = errors.New("leader: not leader")
	// ErrLeadershipLost is returned by Term.Token once the term has ended (Done closed).
	ErrLeadershipLost = errors.New("leader: leadership lost")
	// ErrNoLeader is returned by Leader when nobody takes part in the election.
	ErrNoLeader = errors.New("leader: no participants")
)
