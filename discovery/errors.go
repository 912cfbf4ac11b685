package discovery

import (
	"errors"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrInvalidName is returned for a service name or instance id that is not a single
	// valid ZooKeeper path component (empty, containing '/', ".", "..", or a character
	// ZooKeeper refuses).
	ErrInvalidName = sentinel.New("discovery: invalid name", framework.ErrInvalidArgument)
	// ErrInvalidInstance is returned for an instance that cannot be registered or
	// written: a bad field, a payload that does not marshal to JSON, an unknown service
	// type.
	ErrInvalidInstance = sentinel.New("discovery: invalid instance", framework.ErrInvalidArgument)
	// ErrNotInstance is wrapped by an *InstanceError when a node's data is not a service
	// instance's JSON.
	ErrNotInstance = sentinel.New("discovery: not a service instance", framework.ErrBadData)
	// ErrInvalidURISpec is returned by ParseURISpec for an unbalanced template.
	ErrInvalidURISpec = sentinel.New("discovery: invalid URI spec", framework.ErrInvalidArgument)
	// ErrNotRegistered is returned by Update and Unregister for an instance this
	// ServiceDiscovery did not register.
	ErrNotRegistered = sentinel.New("discovery: instance not registered", framework.ErrNotHeld)
	// ErrAlreadyRegistered is returned by Register for an id this ServiceDiscovery
	// registered already (use Update to change it).
	ErrAlreadyRegistered = errors.New("discovery: instance already registered")
	// ErrConflict is returned by Update when the instance's node was replaced by another
	// registration's between Update's read and its write: the other node got the data.
	ErrConflict = errors.New("discovery: the instance's node was replaced meanwhile")
	// ErrClosed is returned by calls on a closed ServiceDiscovery, ServiceCache or
	// ServiceProvider.
	ErrClosed = sentinel.New("discovery: closed", framework.ErrClosed)
	// ErrNotStarted is returned by reads of a ServiceCache or ServiceProvider that was
	// not started, or whose Start has not read the registry yet.
	ErrNotStarted = sentinel.New("discovery: not started", framework.ErrNotStarted)
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = sentinel.New("discovery: already started", framework.ErrAlreadyStarted)
	// ErrNoInstance is returned by ServiceProvider.GetInstance when no instance is
	// available: none is registered, or the filters and the down-instance policy left
	// none.
	ErrNoInstance = errors.New("discovery: no instance available")
	// ErrStale is returned by ServiceProvider reads while the cache behind it cannot be
	// trusted: its client reported the session lost (it expired, or the client was cut
	// off for longer than the session timeout) and the cache has not read the registry
	// again since.
	ErrStale = errors.New("discovery: cache is stale")
)

// InstanceError says which node held data that is not a service instance, and why.
// It wraps ErrNotInstance and the decoding error.
type InstanceError struct {
	Path string // the node's path
	Err  error  // why its data could not be read as an instance
}

// Error names the node and says why it is not an instance.
func (e *InstanceError) Error() string {
	return fmt.Sprintf("discovery: node %s is not a service instance: %v", e.Path, e.Err)
}

// Unwrap returns ErrNotInstance and the decoding error.
func (e *InstanceError) Unwrap() []error { return []error{ErrNotInstance, e.Err} }
