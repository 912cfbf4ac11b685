// Package zktest runs real ZooKeeper servers for tests, examples and benchmarks:
// a standalone server, an ensemble of 3 or 5 members, and a TCP proxy that injects
// network faults between one client and its servers. With WithPeerProxies, the same proxy
// also carries the ensemble's peer traffic, so a test can cut members off from each other
// (Ensemble.Isolate, Partition, CutOneWay) while clients still reach every member.
// With WithReconfig, an ensemble takes dynamic reconfiguration: Ensemble.AddMember starts a
// new member and reconfigures it in, Ensemble.RemoveMember reconfigures one out and stops it.
//
// It is the Go counterpart of Curator's curator-test (TestingServer, TestingCluster).
// Nothing here is a mock: every server is a real ZooKeeper process.
//
// # Ending a session, cutting a client off
//
// Server.ExpireSession (Ensemble.ExpireSession, ExpireSession for any connect string)
// makes the server end a client's session at once, as Curator's KillSession does:
//
//	err := srv.ExpireSession(ctx, client.SessionID())
//
// The session's ephemeral nodes are gone when it returns; the client is told that its
// session expired when it reconnects. To cut a client off instead, connect it through a
// Proxy and Stall it: the client hears nothing, and the server expires its session once
// the session timeout passes (Heal ends the cut):
//
//	proxy := zktest.NewProxy(t, srv.ConnectString())
//	client, err := framework.Connect(ctx, proxy.ConnectString())
//	proxy.Stall()
//
// # Where the server comes from
//
// In this order:
//
//  1. An existing server or ensemble named by the ZK_TEST_CONNECT environment variable
//     (host:port[,host:port...]). Such a server cannot be stopped or restarted by this
//     package: the fault-injection methods return ErrUnsupported.
//  2. A local install: ZOOKEEPER_HOME (its lib/*.jar and zookeeper-*.jar), or the jar that
//     Debian's zookeeper package installs (/usr/share/java/zookeeper.jar), run with the java
//     found on PATH (or JAVA_HOME). This is what `make deps` installs.
//  3. A ZooKeeper container, when a container provider is registered and a Docker engine
//     answers (standalone servers only). Importing package zktest/zkcontainer, a module of
//     its own, registers one that uses testcontainers-go; see RegisterContainerProvider.
//     This package alone pulls in neither testcontainers nor Docker's client.
//
// When none is available, NewServer and NewEnsemble fail the test with a message that says
// how to get one; under `go test -short` they skip it instead.
//
// A program without a testing.T — an example, a demo, a benchmark — starts its server with
// StartStandalone, which honours its context, and with UseServers takes the servers the
// user named (a -connect flag) instead of starting one; StartProxyFor is its proxy.
// WithPort and WithDataDir start a server of a local install on a given port and keep
// its data in a given directory (zkcurator server is built on them).
//
// # TLS
//
// NewTLSServer (StartTLSServer without a testing.T) starts a local server with a secure
// client port besides its plain one: ZooKeeper's NettyServerCnxnFactory, secureClientPort,
// and PEM key and trust stores written from a TLSMaterial — a CA, a server certificate for
// 127.0.0.1 and localhost and a client certificate, made with crypto/x509 for the test.
// SecureConnectString names the secure port; TLSMaterial.ClientConfig is a client's
// tls.Config; RequireClientCert asks for mutual TLS. A proxy in front of a secure port
// is NewRawProxy's: it carries TLS records as they come. NewEnsemble with
// WithEnsembleTLS gives every member of an ensemble a secure port (one TLSMaterial for
// all); the ensemble's SecureConnectString names them. Debian's install needs Netty's
// jars (libnetty-java, which `make deps` installs with ZooKeeper); ZK_TEST_CONNECT and
// containers have no secure port.
//
// # SASL
//
// NewSASLServer (StartStandalone with WithSASLDigestUsers) starts a local server that
// takes SASL DIGEST-MD5 from the users given: a JAAS file with a "Server" section of
// ZooKeeper's DigestLoginModule (user_<name>="<password>") written to the server's
// directory and named by -Djava.security.auth.login.config, and the SASL authentication
// provider registered (-Dzookeeper.authProvider.sasl), so that ACLs of scheme sasl work.
// SASL is offered, not required: clients without it are served as before.
// WithEnsembleSASLDigestUsers does the same for every member of an ensemble.
//
// Servers started here use settings made for tests: a short tickTime, no fsync, a container
// check interval of one second, every four-letter word allowed, extended types (TTL nodes)
// enabled, a small JVM heap (128 MB; ZKTEST_SERVER_HEAP sets another, such as 1g), and logs (warnings, and the quorum's account of its elections)
// written to the server's temporary directory. When a test fails, NewServer and
// NewEnsemble keep those logs (server.out and zoo.cfg of each member) in a folder they name
// in the test's output; set ZKTEST_KEEP_LOGS to a directory to keep them after every test.
package zktest
