package leader

import (
	"errors"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrClosed is returned by a Latch or Selector used after Close.
	ErrClosed = sentinel.New("leader: closed", framework.ErrClosed)
	// ErrNotStarted is returned by Await and Requeue before Start.
	ErrNotStarted = sentinel.New("leader: not started", framework.ErrNotStarted)
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = sentinel.New("leader: already started", framework.ErrAlreadyStarted)
	// ErrNotLeader is returned by Latch.Term and Latch.Token when this participant does
	// not hold leadership now.
	ErrNotLeader = sentinel.New("leader: not leader", framework.ErrNotHeld)
	// ErrLeadershipLost is returned by Term.Token once the term has ended (Done closed).
	ErrLeadershipLost = sentinel.New("leader: leadership lost", framework.ErrLost)
	// ErrNoLeader is returned by Leader when nobody takes part in the election.
	ErrNoLeader = errors.New("leader: no participants")
)
