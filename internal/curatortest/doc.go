// Package curatortest lets Go tests drive Apache Curator's recipes (Curator 5.4, Java)
// against the same ZooKeeper as the Go ports, to check that the two interoperate: that a
// Go mutex and a Curator InterProcessMutex on one path exclude each other, that a Go
// revoker reaches a Curator holder, and so on.
//
// Start compiles a small Java program (java/CuratorTool.java, embedded in this package)
// once per process into a cache directory, runs it in a JVM with one CuratorFramework
// connected to the given connect string, and stops it at the test's cleanup. The Tool it
// returns sends commands, one line each, and reads the answers:
//
//	tool := curatortest.Start(t, srv.ConnectString())
//	_, err := tool.Do(ctx, "mutex.new m %s", "/locks/orders")
//	got, err := tool.Do(ctx, "mutex.acquire m 300") // "true" or "false"
//
// Each Tool is one Curator client, so one ZooKeeper session; start two Tools for two
// Java processes. Kill ends the JVM without closing its session, which the server then
// expires after the session timeout (WithSessionTimeout).
//
// # Commands
//
// Recipe objects are named by the test with an id (no spaces); one Tool can hold many.
// A timeoutMs of -1 waits forever. Results are separated by single spaces.
//
//	ping                                  pong
//	session                               the session id, in hex
//	async <tag> <command...>              answers at once; when the command is done the
//	                                      event "done <tag> ok ..." or "done <tag> err ..."
//	close                                 closes the client; the JVM exits
//
//	mutex.new <id> <path>                 an InterProcessMutex
//	mutex.revocable <id> [release]        makeRevocable (before acquire): a revocation request
//	                                      raises the event "revoke <id>"; with release the
//	                                      listener also releases the lock and raises
//	                                      "revoked <id> ok" (or "revoked <id> err <msg>")
//	mutex.acquire <id> <timeoutMs>        true|false
//	mutex.release <id>
//	mutex.node <id>                       full path of the lock node this handle holds
//	                                      (empty when it holds none)
//	mutex.owned <id>                      true|false (isAcquiredInThisProcess)
//	mutex.participants <id>               full paths of the lock nodes, holder first
//	revoke <nodePath>                     Revoker.attemptRevoke: writes __REVOKE__ into the node
//
//	sem.new <id> <path> <maxLeases>       an InterProcessSemaphoreV2
//	sem.acquire <id> <n> <timeoutMs>      leases got: n, or 0 on timeout
//	sem.release <id>                      returns the oldest lease this handle holds
//	sem.releaseall <id>                   returns every lease this handle holds
//	sem.leases <id>                       node names of the leases this handle holds
//	sem.participants <id>                 node names of all leases
//
//	semmutex.new <id> <path>              an InterProcessSemaphoreMutex
//	semmutex.acquire <id> <timeoutMs>     true|false
//	semmutex.release <id>
//	semmutex.owned <id>                   true|false
//
//	rw.new <id> <path>                    an InterProcessReadWriteLock
//	rw.readacquire <id> <timeoutMs>       true|false
//	rw.readrelease <id>
//	rw.writeacquire <id> <timeoutMs>      true|false
//	rw.writerelease <id>
//	rw.readers <id>                       full paths of the __READ__ nodes, sorted
//	rw.writers <id>                       full paths of the __WRIT__ nodes, sorted
//
//	barrier.set <path>                    DistributedBarrier
//	barrier.remove <path>
//	barrier.wait <path> <timeoutMs>       true|false
//
//	dbarrier.new <id> <path> <memberQty>  a DistributedDoubleBarrier
//	dbarrier.enter <id> <timeoutMs>       true|false
//	dbarrier.leave <id> <timeoutMs>       true|false
//
//	latch.new <id> <path> <participantId> a LeaderLatch; raises "leader <id> true|false"
//	latch.start <id>
//	latch.await <id> <timeoutMs>          true|false
//	latch.has <id>                        true|false
//	latch.leader <id>                     the leader's participant id
//	latch.participants <id>               participant ids, leader first
//	latch.path <id>                       our latch node's full path
//	latch.close <id>
//
//	group.new <id> <path> <memberId> <payload>  a started GroupMember
//	group.members <id>                    <memberId>=<payload> of getCurrentMembers, sorted
//	group.setdata <id> <payload>          setThisData
//	group.close <id>
//	pnode.new <id> <MODE> <protected> <path> <data>  a started PersistentNode (MODE: a
//	                                      CreateMode name, e.g. EPHEMERAL; protected: true|false)
//	pnode.wait <id> <timeoutMs>           waitForInitialCreate: true|false
//	pnode.path <id>                       getActualPath (empty when none)
//	pnode.setdata <id> <data>             setData
//	pnode.close <id>
//	ttlnode.new <id> <path> <ttlMs> <data>  a started PersistentTtlNode
//	ttlnode.wait <id> <timeoutMs>         waitForInitialCreate: true|false
//	ttlnode.close <id>
//
// Service discovery (curator-x-discovery; java/DiscoveryDriver.java, where the commands
// are listed in full): instances travel as their JSON, base64-encoded.
//
//	disc.new <id> <basePath> <details|map>  a started ServiceDiscovery
//	disc.register <id> <name> <address> <port> <sslPort|-> <TYPE> <uriSpec|-> <description> [k=v...]
//	disc.unregister <id> <instanceId>     disc.names <id>
//	disc.instances <id> <name>            disc.instance <id> <name> <instanceId>
//	disc.provider.new <pid> <id> <name>   disc.provider.get <pid>   disc.provider.all <pid>
//	disc.cache.new <cid> <id> <name>      raises "disccache <cid> <ids>" on each change
//	disc.cache.ids <cid>                  disc.close <id|pid|cid>
//
// Events, read with WaitEvent by prefix, besides those above: "state <STATE>" for each
// connection state change of the Curator client (CONNECTED, SUSPENDED, RECONNECTED, LOST,
// READ_ONLY).
//
// # Threads
//
// Curator's locks are re-entrant per Java thread, so every handle has its own thread.
// The commands acquire, release, node (mutex), enter and leave (double barrier) of one
// handle run on that thread, one after another, even when sent with async: an async
// mutex.acquire followed by a plain mutex.release on the same id releases what the
// acquire took (the release waits until the acquire is done). The other commands run at
// once, so mutex.participants answers while an acquire on the same id is waiting.
// Two handles on the same path in one Tool contend like two threads of one process;
// use two Tools for two processes.
//
// # Benchmark
//
// StartBench runs one of zkbench's workloads on Curator instead
// (java/CuratorBench.java, compiled the same way): C Curator clients with G worker threads
// each, timed inside the JVM, reporting the line of shared/bench/WORKLOADS.md. It needs no
// testing.T; cmd/zkbench's --impl curator uses it.
//
// # Requirements
//
// java and javac (JAVA_HOME or PATH) and Curator 5.4's jars with their dependencies:
// by default Debian's packages in /usr/share/java (libcurator-recipes-java, zookeeper),
// or the list of jars in CURATOR_CLASSPATH. `make deps` installs them. When they are
// missing, Start fails the test, or skips it under go test -short.
package curatortest
