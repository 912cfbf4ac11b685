package cache

import (
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
)

// EventType says what happened. Each cache sends only some of the types: see NodeCache,
// PathChildrenCache and TreeCache.
type EventType int

const (
	// NodeCreated: the node a NodeCache follows now exists (Data is the node).
	NodeCreated EventType = iota + 1
	// NodeChanged: the NodeCache's node has new data (Data is the node, Old what it was).
	NodeChanged
	// NodeDeleted: the NodeCache's node is gone (Data is the node as last cached).
	NodeDeleted
	// ChildAdded: a PathChildrenCache has a new child (Data is the child).
	ChildAdded
	// ChildUpdated: a child has new data (Data is the child, Old what it was).
	ChildUpdated
	// ChildRemoved: a child is gone (Data is the child as last cached).
	ChildRemoved
	// TreeNodeAdded: a TreeCache has a new node (Data is the node).
	TreeNodeAdded
	// TreeNodeUpdated: a node of a TreeCache has new data (Data is the node, Old what it
	// was).
	TreeNodeUpdated
	// TreeNodeRemoved: a node of a TreeCache is gone (Data is the node as last cached).
	TreeNodeRemoved
	// Initialized: the cache's first full read is in (see StartMode). Data is nil.
	Initialized
	// ConnectionSuspended: the client lost its connection; the cache may be stale.
	ConnectionSuspended
	// ConnectionReconnected: the client is connected again; the cache re-reads what it
	// holds and reports the differences.
	ConnectionReconnected
	// ConnectionLost: the client's session is gone or must be assumed gone.
	ConnectionLost
	// Unreadable: a node the cache should hold exists but cannot be read for a reason
	// that retrying does not cure (its ACL denies this client: ErrNoAuth, say). Data.Path
	// names it (Data has no data or Stat); Err says why. The cache does not hold the node
	// (a node it held is reported removed first), and counts it as read for Initialized;
	// it reads it again when its parent's children change, after a reconnection, and
	// every 10 seconds while it stays unreadable (no watch tells of a node made readable:
	// setACL fires none, and the server tells a client no change of a node it may not
	// read). Every cache but CuratorCache sends it.
	Unreadable
)

var eventNames = map[EventType]string{
	NodeCreated:           "NODE_CREATED",
	NodeChanged:           "NODE_CHANGED",
	NodeDeleted:           "NODE_DELETED",
	ChildAdded:            "CHILD_ADDED",
	ChildUpdated:          "CHILD_UPDATED",
	ChildRemoved:          "CHILD_REMOVED",
	TreeNodeAdded:         "NODE_ADDED",
	TreeNodeUpdated:       "NODE_UPDATED",
	TreeNodeRemoved:       "NODE_REMOVED",
	Initialized:           "INITIALIZED",
	ConnectionSuspended:   "CONNECTION_SUSPENDED",
	ConnectionReconnected: "CONNECTION_RECONNECTED",
	ConnectionLost:        "CONNECTION_LOST",
	Unreadable:            "UNREADABLE",
}

// String returns Curator's name of the event type.
func (t EventType) String() string {
	if s, ok := eventNames[t]; ok {
		return s
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// ChildData is one cached node: its path (without the client's namespace), its data (nil
// when the cache keeps Stats only) and its Stat.
type ChildData struct {
	Path string
	Data []byte
	Stat framework.Stat
}

// clone returns a deep copy.
func (d ChildData) clone() ChildData {
	if d.Data != nil {
		d.Data = append([]byte{}, d.Data...)
	}
	return d
}

func (d *ChildData) clonePtr() *ChildData {
	if d == nil {
		return nil
	}
	c := d.clone()
	return &c
}

// Event is one change a cache reports to its listeners.
type Event struct {
	Type EventType
	// Data is the node after the change, or for a removal the node as last cached. It is
	// nil for Initialized and connection events. Each listener gets its own copy.
	Data *ChildData
	// Old is the node before an update (NodeChanged, ChildUpdated, TreeNodeUpdated), nil
	// for other events.
	Old *ChildData
	// Err is why the node could not be read (Unreadable), nil for other events.
	Err error
}

func (e Event) clone() Event {
	e.Data = e.Data.clonePtr()
	e.Old = e.Old.clonePtr()
	return e
}

// String describes the event, e.g. "CHILD_ADDED /a/b".
func (e Event) String() string {
	if e.Data == nil {
		return e.Type.String()
	}
	if e.Err != nil {
		return e.Type.String() + " " + e.Data.Path + ": " + e.Err.Error()
	}
	return e.Type.String() + " " + e.Data.Path
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("cache: %w: "+format, append([]any{framework.ErrInvalidArgument}, args...)...)
}
