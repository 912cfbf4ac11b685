package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zoocurator/zoocurator/framework"
)

// Participant is one contender of an election, as ZooKeeper lists it.
type Participant struct {
	// ID is the participant id, the node's data (Curator's participant id). A Curator
	// InterProcessMutex used on a selector's path without an id shows the data Curator
	// writes by default (the host's address).
	ID string
	// Leader is true for the first participant in line: the leader, or the one about to
	// become leader (it may not have noticed yet).
	Leader bool
	// Node is the path of the participant's node (without the client's namespace).
	Node string
	// Unreadable is true when this client may not read the participant's node (its ACL
	// denies READ): its ID is then unknown, and empty. Only Observe reports such a
	// participant; Participants and Leader fail on it (ErrNoAuth).
	Unreadable bool
}

// participants lists the nodes under path sorted by the sequence after marker, with their
// data. Nodes that vanish while they are read are left out; the first one left is the
// leader, as in Curator's getParticipants.
func participants(ctx context.Context, c *framework.Client, path, marker string) ([]Participant, error) {
	kids, _, err := c.Children(ctx, path)
	if errors.Is(err, framework.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("leader: participants of %s: %w", path, err)
	}
	// Election nodes only: another child of the path (a semaphore's "leases", an
	// operator's note) is no participant (Curator's listing sorts it in).
	kids = slices.DeleteFunc(slices.Clone(kids), func(k string) bool { return !strings.Contains(k, marker) })
	framework.SortBySequence(kids, marker)
	var out []Participant
	for _, k := range kids {
		node := framework.JoinPath(path, k)
		data, _, err := c.GetData(ctx, node)
		if errors.Is(err, framework.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("leader: participants of %s: %w", path, err)
		}
		out = append(out, Participant{ID: string(data), Leader: len(out) == 0, Node: node})
	}
	return out, nil
}

// first returns the first participant, or ErrNoLeader.
func first(ps []Participant, err error, path string) (Participant, error) {
	if err != nil {
		return Participant{}, err
	}
	if len(ps) == 0 {
		return Participant{}, fmt.Errorf("%w: %s", ErrNoLeader, path)
	}
	return ps[0], nil
}

// validate checks the arguments common to NewLatch and NewSelector.
func validate(c *framework.Client, path, id string) error {
	if c == nil {
		return fmt.Errorf("leader: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return fmt.Errorf("leader: %w: %q cannot be an election path", framework.ErrInvalidArgument, path)
	}
	if id == "" {
		return fmt.Errorf("leader: %w: empty participant id", framework.ErrInvalidArgument)
	}
	if err := c.CheckDataSize(path, len(id)); err != nil {
		return fmt.Errorf("leader: participant id: %w", err)
	}
	return nil
}
