// Package groupmember is Curator's GroupMember: a process's membership in a group, and
// the list of the group's members with their payloads.
//
// Node layout, as Curator 5.4: each member is an ephemeral node <membershipPath>/<id>
// holding the member's payload, kept in place by a persistentnode.Node (created again
// when it is deleted or the session is lost). Parents are created as containers. Go and
// Curator members of one group see each other. Every child of the membership path is a
// member, so the group has a path of its own: New refuses the root, whose children
// include ZooKeeper's reserved /zookeeper, as the other recipes refuse it as their path.
//
// CurrentMembers reads the members (id → payload) from a cache of the group's children
// (cache.PathChildrenCache), and always includes this member with its own payload (the
// one it keeps its node with), as Curator's getCurrentMembers does; unlike Curator's,
// also when its id's node holds another member's payload (two members of one id: see
// below), where Curator's reports the node's. The cache is current as of its last watch:
// a member that just joined elsewhere may not be in it yet.
//
// When the session is lost, this member's node goes with it and is created again once
// the client has a new session; other members see it leave and come back. A Close during
// a connection outage leaves the delete of the member's node to a cleanup in the
// background, which looks at it once the connection is back and deletes it when it
// carries the member's owner token (see below), also when a re-creation whose answer was
// lost made it; the client's WaitGuaranteedDeletes waits for it.
//
// A member's node deleted while its ACL denied this client READ (ZooKeeper tells a watch
// nothing about such a node) is noticed within 10 s and created again: the
// persistentnode.Node looks at it every 10 s with one exists request (see persistentnode,
// "What is not guaranteed").
//
// A member's node is its own only when it carries the member's owner token (see
// persistentnode, "Ownership"; the token is an entry of the node's ACL, so names and
// payloads are as Curator's). Two members of one id (in two processes, or on one
// client, whose session they share) share one node: the second finds the first's node,
// writes its payload into it (as Curator does) but does not take it as its own, and its
// Close leaves it; once the first leaves (its Close deletes the node), the second makes
// its own. Curator's second member deletes the first's node at close.
package groupmember
