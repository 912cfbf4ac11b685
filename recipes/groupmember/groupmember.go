package groupmember

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
)

// Member is one member of a group: Curator's GroupMember. It is safe for concurrent use.
type Member struct {
	client *framework.Client
	path   string
	id     string
	node   *persistentnode.Node
	cache  *cache.PathChildrenCache

	mu        sync.Mutex
	started   bool
	closed    bool
	closeDone chan struct{} // closed when the first Close is over
}

// New returns the member id of the group at membershipPath, with payload as its node's
// data. It checks its arguments (nil client, bad path, an id that is not a node name) but
// does not talk to ZooKeeper: Start does. The root and ZooKeeper's reserved /zookeeper
// (or a path below it) cannot be a group: New refuses them with an error matching
// framework.ErrInvalidArgument (every child of the root's would be a member, ZooKeeper's
// /zookeeper too).
func New(c *framework.Client, membershipPath, id string, payload []byte) (*Member, error) {
	if c == nil {
		return nil, fmt.Errorf("groupmember: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(membershipPath); err != nil {
		return nil, fmt.Errorf("groupmember: %w", err)
	}
	if membershipPath == "/" {
		// Every child of the membership path is a member, and the root's children include
		// ZooKeeper's reserved /zookeeper, which no member made: refused, as the other
		// recipes refuse the root as their path.
		return nil, fmt.Errorf("groupmember: %w: the root cannot be a group (its children include ZooKeeper's reserved /zookeeper): give the group a path of its own", framework.ErrInvalidArgument)
	}
	if framework.IsReservedPath(membershipPath) {
		return nil, fmt.Errorf("groupmember: %w: %q cannot be a group", framework.ErrInvalidArgument, membershipPath)
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	node, err := persistentnode.New(c, framework.JoinPath(membershipPath, id), payload,
		persistentnode.WithMode(framework.Ephemeral))
	if err != nil {
		return nil, fmt.Errorf("groupmember: %w", err)
	}
	pc, err := cache.NewPathChildrenCache(c, membershipPath, cache.WithStartMode(cache.BuildInitialCache))
	if err != nil {
		return nil, fmt.Errorf("groupmember: %w", err)
	}
	return &Member{client: c, path: membershipPath, id: id, node: node, cache: pc, closeDone: make(chan struct{})}, nil
}

// ValidateID checks that id can name a member: a valid node name (not empty, no "/",
// not "." or "..", none of the characters ZooKeeper refuses).
func ValidateID(id string) error {
	if id == "" || id == "." || id == ".." {
		return fmt.Errorf("groupmember: %w: member id %q", framework.ErrInvalidArgument, id)
	}
	for _, r := range id {
		if r == '/' {
			return fmt.Errorf("groupmember: %w: member id %q contains '/'", framework.ErrInvalidArgument, id)
		}
	}
	if err := framework.ValidatePath("/" + id); err != nil {
		return fmt.Errorf("groupmember: member id %q: %w", id, err)
	}
	return nil
}

// ID returns this member's id.
func (m *Member) ID() string { return m.id }

// Path returns the group's membership path.
func (m *Member) Path() string { return m.path }

// Start joins the group (the member node is created in the background; see
// WaitForInitialCreate) and reads the group's members into the cache, returning once
// they are read or ctx ends. When Start fails, the member is closed (it left the group
// again): when ctx ended, Start returns at once and the member's clean-up (its node,
// perhaps in flight) finishes in the background; the client's WaitGuaranteedDeletes
// waits for it. Starting twice, or after Close, is an error.
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if m.started {
		m.mu.Unlock()
		return ErrAlreadyStarted
	}
	m.started = true
	m.mu.Unlock()
	err := m.node.Start()
	if err == nil {
		err = m.cache.Start(ctx)
	}
	if err != nil {
		// Not a member: leave nothing running, nor a node behind. The member is closed at
		// once; when ctx ended, the clean-up (which may wait for a create in flight, up to
		// its own timeout) runs in the background, counted by the client's
		// WaitGuaranteedDeletes, so that Start returns now.
		m.mu.Lock()
		first := !m.closed
		m.closed = true
		m.mu.Unlock()
		if first {
			if ctx.Err() == nil || !m.client.GoCleanup(func() { _ = m.teardown() }) {
				_ = m.teardown()
			}
		}
		return fmt.Errorf("groupmember: start %s: %w", m.path, err)
	}
	return nil
}

// WaitForInitialCreate waits until this member's node was first created (or ctx ends).
func (m *Member) WaitForInitialCreate(ctx context.Context) error {
	if m.isClosed() {
		return ErrClosed
	}
	if err := m.node.WaitForInitialCreate(ctx); err != nil {
		return fmt.Errorf("groupmember: %w", mapErr(err))
	}
	return nil
}

// mapErr turns the node's state errors into this package's.
func mapErr(err error) error {
	switch {
	case errors.Is(err, persistentnode.ErrNotStarted):
		return ErrNotStarted
	case errors.Is(err, persistentnode.ErrClosed):
		return ErrClosed
	}
	return err
}

// SetThisData changes this member's payload, in its node now and in every re-creation.
// It waits for another write of the payload within ctx (see persistentnode.Node.SetData).
func (m *Member) SetThisData(ctx context.Context, data []byte) error {
	if m.isClosed() {
		return ErrClosed
	}
	if err := m.node.SetData(ctx, data); err != nil {
		return fmt.Errorf("groupmember: %w", mapErr(err))
	}
	return nil
}

// CurrentMembers returns the group's members, id → payload, from the cache; this member
// is always included, with its own payload (the one it keeps its node with, also when
// another member of its id wrote its own into their shared node).
func (m *Member) CurrentMembers() (map[string][]byte, error) {
	m.mu.Lock()
	started, closed := m.started, m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if !started {
		return nil, ErrNotStarted
	}
	out := map[string][]byte{}
	for _, d := range m.cache.Current() {
		out[IDFromPath(d.Path)] = d.Data
	}
	// This member's own payload, also when its id's node holds another member's (two
	// members of one id share one node: see the package doc).
	out[m.id] = m.node.Data()
	return out, nil
}

// IDFromPath returns the member id of a member node's path: its last component.
func IDFromPath(path string) string { return framework.NodeName(path) }

// AddListener registers fn to hear the group cache's events (a member joined, changed
// its payload or left; connection events), one call at a time on a goroutine the cache
// owns. It returns a function that unregisters fn. fn may call Close.
func (m *Member) AddListener(fn func(cache.Event)) (remove func()) {
	return m.cache.AddListener(fn)
}

// Close leaves the group: it stops the cache and deletes this member's node when it is
// its own (see persistentnode.Node.Close): the node of another member of the same id,
// also one on this client, stays. Close may be called many times, also from a listener; a
// Close made while another is under way waits until that one is over (and returns nil),
// unless it is made from a listener, which the first Close may be waiting for: that one
// returns at once, and the first Close finishes once the listener has returned.
func (m *Member) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		if !m.cache.InListener() {
			<-m.closeDone // the first Close ends: it waits for nothing that waits for this one
		}
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	return m.teardown()
}

// teardown stops the cache and closes the node: the work of the first Close, which
// every later one waits for (closeDone).
func (m *Member) teardown() error {
	defer close(m.closeDone)
	return errors.Join(m.cache.Close(), m.node.Close())
}

// isClosed reports whether the member was closed (or its Start failed).
func (m *Member) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}
