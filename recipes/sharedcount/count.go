package sharedcount

import (
	"context"
	"encoding/binary"

	"github.com/zoocurator/zoocurator/framework"
)

// Count is Curator's SharedCount: a 32-bit integer every participant agrees on, stored as
// 4 big-endian bytes in one node. It is safe for concurrent use.
type Count struct{ v *Value }

// New returns a shared count at path; Start creates the node with seed when it does not
// exist. It checks its arguments but does not talk to ZooKeeper.
func New(c *framework.Client, path string, seed int32) (*Count, error) {
	v, err := NewValue(c, path, Encode(seed))
	if err != nil {
		return nil, err
	}
	return &Count{v: v}, nil
}

// Encode returns n as the 4 big-endian bytes Curator's SharedCount stores.
func Encode(n int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(n))
}

// Decode reads a count node's data (found at path, for the error). Anything but 4 bytes is
// a *BadDataError naming the bytes found.
func Decode(path string, b []byte) (int32, error) {
	if len(b) != 4 {
		return 0, &BadDataError{Path: path, Data: b}
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// Path returns the node's path.
func (c *Count) Path() string { return c.v.path }

// Start creates the node with the seed if it does not exist, reads it and starts keeping
// it current.
func (c *Count) Start(ctx context.Context) error { return c.v.Start(ctx) }

// Get returns the cached count and its version. The data of a node written by someone
// else that is not 4 bytes long is a *BadDataError.
func (c *Count) Get() (Versioned[int32], error) {
	raw, err := c.v.Get()
	if err != nil {
		return Versioned[int32]{}, err
	}
	n, err := Decode(c.v.path, raw.Value)
	if err != nil {
		return Versioned[int32]{}, err
	}
	return Versioned[int32]{Value: n, Version: raw.Version, Zxid: raw.Zxid}, nil
}

// TrySet sets the count to n only if nobody changed it since prev was read; otherwise it
// returns an error matching ErrConflict. An error matching ErrUnknownOutcome means the
// write may or may not have been applied; one matching ErrNodeReplaced as well, that it
// was applied to a node deleted and made again since prev was read (see Value.TrySet).
func (c *Count) TrySet(ctx context.Context, prev Versioned[int32], n int32) error {
	return c.v.TrySet(ctx, Versioned[[]byte]{Value: Encode(prev.Value), Version: prev.Version, Zxid: prev.Zxid}, Encode(n))
}

// Set sets the count to n whatever it holds. An error matching ErrUnknownOutcome means
// the write may or may not have been applied; one matching ErrConflict, that the node was
// deleted and nothing was written.
func (c *Count) Set(ctx context.Context, n int32) error { return c.v.Set(ctx, Encode(n)) }

// AddListener registers fn to hear each new count, one call at a time on a goroutine the
// library owns; a node that does not hold 4 bytes is reported with its error. A listener
// that panics is logged (at Error, on the client's logger) and the others are told. It
// returns a function that unregisters fn.
func (c *Count) AddListener(fn func(Versioned[int32], error)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	return c.v.AddListener(func(raw Versioned[[]byte]) {
		n, err := Decode(c.v.path, raw.Value)
		fn(Versioned[int32]{Value: n, Version: raw.Version, Zxid: raw.Zxid}, err)
	})
}

// AddStateListener registers fn to hear the client's connection states from now on. It
// returns a function that unregisters fn.
func (c *Count) AddStateListener(fn func(framework.State)) (remove func()) {
	return c.v.AddStateListener(fn)
}

// Close stops keeping the count current. The node stays. It may be called many times.
func (c *Count) Close() error { return c.v.Close() }
