package persistentnode

import (
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// Option configures a Node or a TTLNode.
type Option func(*options)

type options struct {
	mode       framework.CreateMode
	modeSet    bool
	protected  bool
	ttl        time.Duration
	noParents  bool
	childName  string
	touchEvery int
}

func defaultOptions() options {
	return options{mode: framework.Ephemeral, childName: DefaultChildNodeName, touchEvery: DefaultTouchScheduleFactor}
}

// WithMode sets the node's create mode. The default is framework.Ephemeral. Not for a
// TTLNode, whose node is a container.
func WithMode(m framework.CreateMode) Option {
	return func(o *options) { o.mode, o.modeSet = m, true }
}

// WithProtection names the node _c_<uuid>-<name> (Curator's protected mode), so that
// the node is found again after a create whose reply was lost. The default is off. Not
// for a TTLNode.
func WithProtection() Option { return func(o *options) { o.protected = true } }

// WithTTL sets the TTL of a node of mode framework.PersistentWithTTL or
// framework.PersistentSequentialWithTTL; it is needed with, and only with, those modes,
// and ZooKeeper takes 1 ms to 2^40-1 ms. The default is none. Not for a TTLNode, whose TTL is an argument.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithoutParents makes creation fail (and the node wait, retried on reconnection) when
// the parent is missing, instead of creating missing parents as containers (the default,
// Curator's useParentCreation true).
func WithoutParents() Option { return func(o *options) { o.noParents = true } }

// WithChildName sets the name of a TTLNode's touched child. The default is
// DefaultChildNodeName ("touch"). Only for a TTLNode.
func WithChildName(name string) Option { return func(o *options) { o.childName = name } }

// WithTouchScheduleFactor makes a TTLNode write its child every TTL/factor. The default
// is DefaultTouchScheduleFactor (2). Only for a TTLNode.
func WithTouchScheduleFactor(factor int) Option { return func(o *options) { o.touchEvery = factor } }
