// Package discovery is service discovery in the registry format of Curator's
// curator-x-discovery (5.4), the format Spring Cloud Zookeeper uses too: Go services
// register in the same registry as Java ones and find them, and the other way round.
//
// # Layout
//
// Each instance of a service is one node, basePath/<name>/<id>, holding the instance's
// JSON exactly as Curator's JsonInstanceSerializer writes it:
//
//	{"name":"orders","id":"6c1f…","address":"10.0.0.7","port":8080,"sslPort":null,
//	 "payload":{"@class":"com.example.Details","zone":"eu"},"registrationTimeUTC":1732350000000,
//	 "serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},…]}}
//
// The node is ephemeral for Dynamic instances, persistent for Static and Permanent ones,
// and ephemeral-sequential (basePath/<name>/<id><10 digits>) for DynamicSequential ones;
// the name's node is created as a container.
//
// # Pieces
//
//   - Instance holds Curator's fields; NewInstance fills in Curator's builder defaults.
//     The payload is a type parameter; a payload Java reads as a class of its own
//     implements JavaTyped.
//   - URISpec is Curator's URI template ("{scheme}://{address}:{port}").
//   - ServiceDiscovery registers, updates and unregisters instances and queries the
//     registry.
//   - ServiceCache keeps one service's instances current; reads cost no request.
//   - ServiceProvider picks instances from a cache by a Strategy (RoundRobin, Random,
//     Sticky), with filters and a down-instance policy (NoteError).
//
// # Session loss
//
// A registered instance is kept: when its node goes (the session expired and the client
// has a new one, or someone deleted it) it is created again once the client is
// connected, once. While the client is cut off, the registration cannot be kept and the
// server removes a Dynamic instance when the session expires. A cache keeps what it
// holds while disconnected; once the client reports the session lost, providers return
// ErrStale until the cache has read the registry again, so a provider never hands out an
// instance whose node has been gone for longer than the session timeout.
//
// # Differences from Curator
//
// Curator re-creates an instance's node (delete, then create) on every reconnection and
// only logs a deletion of it; here the node is left alone while it is there and this
// session's, and created again when it is gone. Unregister finds a DynamicSequential
// instance's node by its actual path (Curator's looks for the id without the sequence
// number). QueryForInstances and caches skip a node whose data is not an instance and
// say which (Curator's cache throws).
package discovery
