// Package discovery is service discovery in the registry format of Curator's
// curator-x-discovery (5.4), the format Spring Cloud Zookeeper uses too: Go services
// register in the same registry as Java ones and find them, and the other way round.
//
// # Layout
//
// Each instance of a service is one node, basePath/<name>/<id>, holding the instance's
// JSON as Curator's JsonInstanceSerializer writes it, strings escaped as Jackson escapes
// them (U+2028 and U+2029 as they are, control characters as \u001F), with two
// differences: a disabled instance has "enabled":false in Curator's default
// (compatible) form, where Curator writes no field and Java reads the instance as
// enabled; and a payload's map keys are in Go's order (sorted), where Jackson keeps the
// map's own order. Java reads both. For example:
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
// server removes a Dynamic instance when the session expires.
//
// ZooKeeper tells a watch nothing about a node its client may not read, and setACL fires
// no watch: a registered instance's node whose ACL someone changed to deny this client
// READ, and then deleted, fires no event. So each registration also looks at its node
// every 10 s (one exists request, which needs no permission on the node, per 10 s per
// registered instance; no watch is added): a deletion made while the node was unreadable
// is noticed within 10 s, and the instance is registered again. A cache, for the same
// reason, holds an instance whose node was made unreadable to its client as last read
// until a reconnection (see ServiceCache).
//
// A node belongs to the registration that made it, not to a session: each registration
// puts a token of its own in the ACL of every node it creates (framework.WithOwnerToken:
// one READ entry for an identity no one can authenticate as; the node's name and data are
// Curator's), and knows the node by its czxid once it has read it. A node whose create's
// reply was lost is told by the token; a node carrying no token of ours, or whose ACL we
// may not read (the token needs READ or ADMIN on it), is never ours. Two registries on
// one client share a session, and a node this registration made under a session the
// client has since given up is still its own. Where a registration replaces a node
// (another's at Register, or its own of a session given up) it deletes it and
// creates its own in one transaction bound to the node it read: the transaction also
// creates and deletes a sequential node under the parent, named with the number it read
// the parent would give its next child, so that a node made at the path since then
// (which a data version cannot tell apart) fails it. The registration that lost its node no longer owns any. Unregister and Close
// delete only this registration's node, bound to its czxid; what they cannot do within
// their context (Close: one 10 s bound for all) goes on in the background until done
// or the client closes (Client.WaitGuaranteedDeletes waits for it).
//
// The client gives a session up when it has been cut off for longer than the session
// timeout; the server may still hold that session (after a lost quorum or a paused
// leader it gives every session a whole timeout more). Once the client has its new
// session, the registry replaces that node at once, deleting it and creating the new one
// in one transaction, so that no reader finds
// the instance missing (a cache keeps an instance whose node was replaced until it has
// the new node); it does not wait for the server to expire the old session. (A
// DynamicSequential instance's node is deleted and then made under a new name: it is
// missing for that round trip.)
// Where the server expires the session itself before the client has a new one, the
// instance is missing from that expiry until the client has a new session and the keeper
// has made the node again; nothing can be done about that from the client.
//
// Measured with reliability's TestDiscoveryUnderFaults (a 3-member ensemble, a 2 s
// session timeout; another client of the ensemble reads the instance's node every 10 ms
// and reports the longest time it found none; 5 runs each, 2026-11-26): after a lost
// quorum (2 s) the instance was never missing (0 in 5 of 5: the client gave its session
// up, the quorum came back still holding it, and the node was replaced in one
// transaction; before this, it stayed under the old session until that expired, then
// vanished until made again). After a paused leader (3 s) it was missing for 0.29 s to
// 1.03 s (0.29, 0.31, 0.69, 0.96, 1.03): the resumed leader expires the session it did
// not hear from during the pause before the client can give it up; the gap is the
// client's way to a new session (go-zookeeper waits 1 s between passes over the server
// list) plus the create. A stall longer than the session timeout, or a follower cut off from its peers,
// expires the session while the client is cut off: 3.1 s to 3.6 s missing with a 2 s
// session timeout.
//
// A cache keeps what it holds while disconnected; once the client reports the session
// lost, providers return ErrStale (at once: the cache's generation is behind the
// client's, whatever the client's other state listeners are busy with) until the cache
// has read the registry again. The client
// reports it lost a session timeout after it noticed the silence, and it notices the
// silence 2/3 of the session timeout after it last heard from the server: a provider may
// hand out an instance for up to 5/3 of the session timeout after its node was deleted
// (TestProviderStalenessBound: 3.30 s with a 2 s session timeout, a connection stalled
// just before the delete), not longer.
//
// # Differences from Curator
//
// Curator re-creates an instance's node (delete, then create) on every reconnection and
// only logs a deletion of it; here the node is left alone while it is there and this
// registration's, replaced in one transaction when it is of a session given up, and
// created again when it is gone. Ownership is per registration (the node's czxid):
// Unregister, Close and Update touch only the node this registration made, never another
// registration's node of the same id, even on the same client (Curator deletes and
// writes whatever node is at the path). A node at the path at Register is replaced in one
// transaction, a persistent one too (Curator deletes it, then creates its own). Instance
// nodes carry an owner token in their ACL (getACL shows one more READ entry). Instance
// JSON is escaped as Jackson escapes it (&, <, >, U+2028 and U+2029 as they are).
// Unregister finds a DynamicSequential instance's node by its actual path (Curator's looks for the id without the sequence
// number). QueryForInstances and caches skip a node whose data is not an instance, or
// that this client may not read, and say which (Curator's cache throws).
package discovery
