package framework

// State is a connection state as Curator defines it.
type State int

const (
	// Connected is sent once, when the client first gets a session.
	Connected State = iota + 1
	// Suspended: the connection was lost; the session may still be alive.
	Suspended
	// Reconnected: connected again after Suspended or Lost, with the same session or,
	// after Lost, possibly a new one (compare SessionID or Generation).
	Reconnected
	// Lost: the session is gone: the server expired it, the session id changed, or the
	// client has been Suspended longer than the session timeout and must assume so.
	Lost
	// ReadOnly: connected to a read-only server. go-zookeeper v1.0.4 never asks for a
	// read-only session, so the client never reports this state; it exists so that code
	// written against Curator's states compiles and reads the same.
	ReadOnly
)

// String returns Curator's name of the state.
func (s State) String() string {
	switch s {
	case Connected:
		return "CONNECTED"
	case Suspended:
		return "SUSPENDED"
	case Reconnected:
		return "RECONNECTED"
	case Lost:
		return "LOST"
	case ReadOnly:
		return "READ_ONLY"
	}
	return "UNKNOWN"
}

// IsConnected reports whether the state means a usable connection.
func (s State) IsConnected() bool { return s == Connected || s == Reconnected || s == ReadOnly }

// ErrorPolicy says which connection states end what a recipe holds (a lock lease,
// leadership).
type ErrorPolicy int

const (
	// StandardErrorPolicy ends leases on Suspended or Lost (Curator's default): safest,
	// since while suspended the client cannot know whether its session lives.
	StandardErrorPolicy ErrorPolicy = iota
	// SessionErrorPolicy ends leases only on Lost: fewer false alarms on brief
	// disconnects, at the price of a window in which a lease may already be gone.
	SessionErrorPolicy
)

// String names the policy.
func (p ErrorPolicy) String() string {
	if p == SessionErrorPolicy {
		return "session"
	}
	return "standard"
}
