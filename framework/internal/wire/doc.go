// Package wire speaks ZooKeeper's client protocol: the jute encoding of its records, a
// Conn that carries one session over one connection to one server, and a Client that
// keeps a session over a succession of Conns. The Client is what the framework is to
// use instead of go-zookeeper's Conn, whose exported types (zk.Stat, zk.ACL,
// zk.EventType, zk.State) and error values (zk.ErrNoNode, ...) it keeps as its
// vocabulary. The framework uses it when the environment has ZOOCURATOR_CONN=wire
// (framework/conn.go), go-zookeeper's Conn otherwise, while both exist.
//
// # What it does
//
// Dial opens a connection (through Config.Dialer, plain TCP by default, so that TLS is
// a dialer's business), sends the connect request and returns once the server has
// answered it, within ctx (without a deadline: the session timeout). A Config with a
// Session resumes that session on the new connection; a server that says it expired
// gives ErrSessionExpired. Dial then authenticates with Config.SASL (see SASL below),
// sends Config.Auth (the server keeps credentials per connection, not per session) and
// Config.Watches (setWatches, or setWatches2 for persistent watches, in batches of 128
// KB of paths, relative to Config.LastZxid).
//
// Requests are pipelined and matched to their replies by xid, in order; a reply out of
// order ends the connection. Every reply's zxid is returned (Reply.Zxid and the like,
// Error.Zxid for a server error) and Conn.LastZxid keeps the highest. An idle Conn pings
// after a third of the negotiated session timeout (at most every 10 s), and gives the
// connection up when nothing came for two thirds of it, as the Java client does.
//
// # SASL
//
// Config.SASL (ClientConfig.SASL) is a user and password for SASL DIGEST-MD5 (RFC 2831),
// as the Java client speaks it to a server whose JAAS configuration has a "Server"
// section with ZooKeeper's DigestLoginModule (user_<name>="<password>") and whose SASL
// authentication provider is registered (zookeeper.authProvider.<n> =
// org.apache.zookeeper.server.auth.SASLAuthenticationProvider): the server then knows the
// connection as the "sasl" identity <name>, which ACLs name as sasl:<name>:<perms>. Only
// DIGEST-MD5 with qop auth (no integrity or privacy layer): no Kerberos (GSSAPI), no
// other mechanism, no JAAS file read on the client's side.
//
// It runs on every connection, right after the handshake and before any other packet
// (the auth packets, setWatches, a caller's request), within Dial's ctx, as the Java
// client does: the sasl packets (opcode 102, ordinary xids) carry an empty token,
// the answer to the server's challenge (digest-uri "zookeeper/zk-sasl-md5", the name both
// Java sides use, a random cnonce, authzid the user name as the Java client sends it),
// and the server's rspauth is checked, so that a server that does not know the password
// is not taken for one that does. A refusal (a wrong password: the server answers
// AuthFailed and closes the connection; a server without SASL users, which sends no
// challenge; an rspauth that does not match) fails Dial with an error wrapping
// zk.ErrAuthFailed, and ends a Client as a refused Auth does (zk.StateAuthFailed;
// requests fail with zk.ErrAuthFailed). A challenge that does not parse, or lacks its
// nonce or md5-sess, gives ErrMalformed (a Client tries the next server). ZooKeeper 3.8.0
// checks an unknown user against the password of the last user it saw (ZOOKEEPER-4839,
// fixed later): the server's business, but an unknown user is not always refused there.
//
// Beyond go-zookeeper's requests, it sends create2 for every mode (containers and TTL
// nodes too), addWatch (persistent and persistent recursive), removeWatches and
// checkWatches, multiRead, getEphemerals, getAllChildrenNumber and whoAmI.
//
// # The Client: a session across connections
//
// A Client (NewClient) dials the servers of a HostList in the Java client's order: one
// random order, round after round, the server of the last connection last, and a
// pause of a second after a round that reached none. Each attempt has the session
// timeout divided by the number of servers (at least a second), as in the Java
// client. When a connection ends, the Client resumes the session on the next server
// with its id, password and last zxid (a server behind that zxid refuses it, and the
// next is tried), its credentials (ClientConfig.SASL and ClientConfig.Auth, on every
// connection, before any request) and its watches. HostList.Update replaces the servers while the Client runs;
// the connection open then is kept.
//
// Expiry. The session ends when a server says it expired (on a reconnection), when
// GiveUp is called, or on the client's side when no frame (a reply, a ping's, an event,
// the handshake's) came from any server for the whole negotiated session timeout. The
// server restarts a session's timeout at every packet it receives, and each frame the
// client receives was sent after the server received a packet of the session: counted
// from the last frame received, the timeout ends at the earliest when the server may
// expire the session (late by one network delay at most), and before the server does
// whenever a packet whose answer was lost reached it. The Java client, since
// ZOOKEEPER-4508, waits 4/3 of the timeout, to be sure; Curator counts from the
// disconnection (two thirds of the timeout after the last frame), which is later still.
// A lock holder must rather stop early than late, so this Client waits no longer than
// the timeout. After an expiry the Client reports zk.StateExpired, ends every watch
// (EventNotWatching, one notice per path), fails the requests waiting for a connection
// with ErrSessionExpired (they are never sent in another session) and opens a new
// session, keeping its last zxid so that its reads never go back in time.
//
// Watches. A read with a watch (Exists, GetData, GetChildren) and AddWatch register
// their watch when the server's reply says it is set, on the reading goroutine before
// the next frame is read: the registry and the events that end its watches are in the
// server's order, so a notice's Ended says which one-shot watches it ended, exactly.
// The registry is what a resumed session sets again (setWatches, setWatches2 for
// persistent ones, relative to the last zxid); RemoveWatches removes from it and makes
// the events the Java client makes (EventDataWatchRemoved, ...).
//
// Notices and replies. One callback, ClientConfig.OnEvent, gets every change of state
// (zk.StateConnecting, zk.StateHasSession, zk.StateDisconnected, zk.StateExpired,
// zk.StateAuthFailed, StateClosed) and every watch event, one at a time, in order, on a
// goroutine of the Client; a reply is delivered after the notices before it, across
// reconnections too. No goroutine or channel is made per watch.
//
// Requests. A request goes to the connection of the moment; one made while there is
// none waits for the next connection of its session, in the order requests were made,
// within its ctx (a request whose ctx ends before it was sent is never sent). Close
// sends closeSession on the open connection (waiting at most 2 s) and ends the Client.
//
// # Events and replies
//
// Watch events go to Config.OnEvent, called on the Conn's reading goroutine one at a
// time, interleaved with the delivery of replies in the order the server sent them:
// when a request returns, OnEvent has returned for every event sent before its reply. So
// a client that reads new data has been told of the watch it fired. OnEvent must return
// quickly: while it runs, no reply is delivered.
//
// # Errors
//
//   - *Error: the server answered with an error code. Its Unwrap is go-zookeeper's
//     value for the code (errors.Is(err, zk.ErrNoNode)); codes go-zookeeper lacks have
//     Code* constants (CodeNoWatcher, ...).
//   - ErrConnectionLost (wrapping zk.ErrConnectionClosed): the connection failed; the
//     requests awaiting replies fail with it, and may have been applied. The session
//     may still live: Dial again with Conn.Session and Conn.LastZxid.
//   - ErrClosed (wrapping zk.ErrClosing): Close or CloseSession ended the Conn.
//   - ErrSessionExpired (wrapping zk.ErrSessionExpired): Dial could not resume the
//     session; a Client's request that waited for a connection of a session that
//     expired. ErrSessionTimedOut and ErrSessionGivenUp wrap it: the causes of an expiry
//     on the client's side.
//   - an error wrapping zk.ErrAuthFailed: Dial's credential (an Auth, the SASL
//     password) was refused; a Client whose credential a server refused has ended
//     (every server would refuse it).
//   - ctx.Err(): the caller's context ended first; the request may have been applied,
//     and its late reply is dropped.
//   - ErrMalformed: the server sent bytes that do not decode (never a panic);
//     ErrFrameTooLarge: a request beyond Config.MaxFrame, not sent.
//
// # What it does not do
//
// A Conn is one connection: choosing among servers, reconnecting, telling the
// application of disconnection and expiry, timing a session's expiry on the client's
// side, keeping a registry of watches and credentials are the Client's. A Client does
// not move a connection to balance servers after HostList.Update (the Java client may),
// does not wait a random delay before reconnecting, sends a request that a failed
// connection carried only once (it fails with ErrConnectionLost, maybe applied), has no
// AddAuth after NewClient, no local removal of watches while disconnected, and no
// read-only mode (it refuses read-only servers). Neither checks paths (the server
// answers zk.ErrBadArguments). Reconfig, getConfig and the read-only mode's search for
// a read-write server are not there;
// CanBeReadOnly is sent and Session.ReadOnly reported, untested against a read-only
// server (zktest starts none). A session first opened on a read-only server is not a
// global one: the Java client does not resume it (it sends session id 0 until it saw a
// read-write server), and a caller should do the same.
//
// Against ZooKeeper 3.8 (the version zktest runs): watcher types Persistent and
// PersistentRecursive are refused (remove a persistent watch as WatcherAny); a plain
// create in a multi is answered without its Stat; a notification's zxid is -1.
//
// # What go-zookeeper's Conn does for the framework, and what does it here
//
// zk.Connect with its dialer, host provider and event callback: NewClient (ClientConfig
// Hosts, Dialer taking a ctx, SessionTimeout, Chroot, Auth, OnEvent; SASL, which
// go-zookeeper lacks); the framework's
// host list: HostList (Update on an ensemble change); the dialer's reply gate and the
// new-session hold: the ordered stream (a reply is handed over only once OnEvent has
// returned for every notice before it); the negotiated timeout read from a log line:
// Notice.Timeout; AddAuth and its retries: ClientConfig.Auth, sent on every connection
// before any request; per-watch channels: Notice.Ended, one callback; SessionID, Server:
// Client.Session, Client.Server; Get/Exists/Children with W: GetData/Exists/GetChildren
// with watch true; Create, CreateContainer, CreateTTL: Create, which returns the Stat;
// Set, Delete, Sync, GetACL, SetACL, Multi: the same, with ctx; Close: Close; closing a
// Conn to start a new session (a simulated Lost): GiveUp. States map to Curator's as
// HasSession → Connected or Reconnected (Notice.NewSession), Disconnected → Suspended,
// Expired → Lost.
package wire
