// Package wire speaks ZooKeeper's client protocol: the jute encoding of its records, and
// a Conn that carries one session over one connection to one server. It is the
// connection the framework is to use instead of go-zookeeper's Conn, whose exported
// types (zk.Stat, zk.ACL, zk.EventType, zk.State) and error values (zk.ErrNoNode, ...)
// it keeps as its vocabulary. The framework does not use it yet.
//
// # What it does
//
// Dial opens a connection (through Config.Dialer, plain TCP by default, so that TLS is
// a dialer's business), sends the connect request and returns once the server has
// answered it, within ctx (without a deadline: the session timeout). A Config with a
// Session resumes that session on the new connection; a server that says it expired
// gives ErrSessionExpired. Dial then sends Config.Auth (the server keeps credentials per
// connection, not per session) and Config.Watches (setWatches, or setWatches2 for
// persistent watches, in batches of 128 KB of paths, relative to Config.LastZxid).
//
// Requests are pipelined and matched to their replies by xid, in order; a reply out of
// order ends the connection. Every reply's zxid is returned (Reply.Zxid and the like,
// Error.Zxid for a server error) and Conn.LastZxid keeps the highest. An idle Conn pings
// after a third of the negotiated session timeout (at most every 10 s), and gives the
// connection up when nothing came for two thirds of it, as the Java client does.
//
// Beyond go-zookeeper's requests, it sends create2 for every mode (containers and TTL
// nodes too), addWatch (persistent and persistent recursive), removeWatches and
// checkWatches, multiRead, getEphemerals, getAllChildrenNumber and whoAmI.
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
//     session.
//   - ctx.Err(): the caller's context ended first; the request may have been applied,
//     and its late reply is dropped.
//   - ErrMalformed: the server sent bytes that do not decode (never a panic);
//     ErrFrameTooLarge: a request beyond Config.MaxFrame, not sent.
//
// # What it does not do
//
// A Conn is one connection: choosing among servers, reconnecting, telling the
// application of disconnection and expiry, and timing a session's expiry on the
// client's side are the caller's. It keeps no registry of watches (the caller knows
// which to set again, and makes the DataWatchRemoved-like events the Java client makes
// after removeWatches: the server sends none) and no credentials beyond one Dial. It
// checks no paths (the server answers zk.ErrBadArguments). SASL, reconfig, getConfig
// and the read-only mode's search for a read-write server are not there;
// CanBeReadOnly is sent and Session.ReadOnly reported, untested against a read-only
// server (zktest starts none). A session first opened on a read-only server is not a
// global one: the Java client does not resume it (it sends session id 0 until it saw a
// read-write server), and a caller should do the same.
//
// Against ZooKeeper 3.8 (the version zktest runs): watcher types Persistent and
// PersistentRecursive are refused (remove a persistent watch as WatcherAny); a plain
// create in a multi is answered without its Stat; a notification's zxid is -1.
package wire
