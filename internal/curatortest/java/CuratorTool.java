/*
 * CuratorTool drives Apache Curator's recipes from a line protocol, so that Go tests can run
 * real Curator (5.4) next to the Go ports on the same ZooKeeper paths. It only uses Curator's
 * public API.
 *
 * Usage: java -cp <classes>:<curator jars> CuratorTool <connectString> <sessionTimeoutMs>
 *
 * It starts one CuratorFramework (ExponentialBackoffRetry(100 ms, 10)), waits until it is
 * connected and prints "ready <session id in hex>" (or "err <message>" and exits 1).
 * Then it reads one command per line on stdin and answers each with exactly one line on
 * stdout, in the order the commands came:
 *
 *   ok [result...]     success; results are separated by single spaces
 *   err <message>      failure (the stack trace goes to stderr)
 *
 * Lines that start with "event " may be printed at any time, between answers:
 *
 *   event state <CONNECTED|SUSPENDED|RECONNECTED|LOST|READ_ONLY>   connection state change
 *   event revoke <id>                 a revocation request reached the revocable mutex <id>
 *   event revoked <id> ok|err <msg>   the listener released <id> (mutex.revocable <id> release)
 *   event leader <id> true|false      leader latch <id> gained / lost leadership
 *   event done <tag> <answer line>    an "async <tag> ..." command finished
 *
 * Nothing else is ever printed on stdout.
 *
 * Handles: recipe objects are named by the caller with an <id> (no spaces). Each handle has
 * its own single thread, on which its thread-bound commands (acquire, release, node, enter,
 * leave: marked [T] below) run, one after the other: Curator's locks are re-entrant per
 * thread, so acquire and release of one handle must happen on the same thread. Other
 * commands run on the reading thread (or, with async, on a shared pool).
 * A timeoutMs of -1 waits forever.
 *
 *   ping                                     ok pong
 *   session                                  ok <session id in hex>
 *   async <tag> <command...>                 ok at once; later "event done <tag> <answer>"
 *   close                                    ok, then closes the client and exits
 *
 *   mutex.new <id> <path>                    InterProcessMutex
 *   mutex.revocable <id> [release]           makeRevocable (call before acquire): the listener
 *                                            prints "event revoke <id>"; with "release" it also
 *                                            releases the lock (on the handle's thread) and
 *                                            prints "event revoked <id> ok|err ..."
 *   mutex.acquire <id> <timeoutMs>     [T]   ok true|false
 *   mutex.release <id>                 [T]   ok
 *   mutex.node <id>                    [T]   ok <full path of this handle's lock node> (ok with
 *                                            nothing when not held)
 *   mutex.owned <id>                         ok true|false (isAcquiredInThisProcess)
 *   mutex.participants <id>                  ok <node> <node> ... (sorted, holder first)
 *   revoke <nodePath>                        Revoker.attemptRevoke(client, nodePath)
 *
 *   sem.new <id> <path> <maxLeases>          InterProcessSemaphoreV2
 *   sem.acquire <id> <n> <timeoutMs>   [T]   ok <leases got: n, or 0 on timeout>
 *   sem.release <id>                   [T]   returns the oldest lease held; ok
 *   sem.releaseall <id>                [T]   returns every lease held; ok
 *   sem.leases <id>                          ok <node name of each lease held by this handle>
 *   sem.participants <id>                    ok <lease node names>
 *
 *   semmutex.new <id> <path>                 InterProcessSemaphoreMutex
 *   semmutex.acquire <id> <timeoutMs>  [T]   ok true|false
 *   semmutex.release <id>              [T]   ok
 *   semmutex.owned <id>                      ok true|false
 *
 *   rw.new <id> <path>                       InterProcessReadWriteLock
 *   rw.readacquire <id> <timeoutMs>    [T]   ok true|false
 *   rw.readrelease <id>                [T]   ok
 *   rw.writeacquire <id> <timeoutMs>   [T]   ok true|false
 *   rw.writerelease <id>               [T]   ok
 *   rw.readers <id>                          ok <node> ... (the read lock's participants: only
 *                                            __READ__ nodes, sorted)
 *   rw.writers <id>                          ok <node> ... (the write lock's: only __WRIT__ nodes)
 *
 *   barrier.set <path>                       DistributedBarrier.setBarrier
 *   barrier.remove <path>                    DistributedBarrier.removeBarrier
 *   barrier.wait <path> <timeoutMs>          ok true|false
 *
 *   dbarrier.new <id> <path> <memberQty>     DistributedDoubleBarrier
 *   dbarrier.enter <id> <timeoutMs>    [T]   ok true|false
 *   dbarrier.leave <id> <timeoutMs>    [T]   ok true|false
 *
 *   latch.new <id> <path> <participantId>    LeaderLatch with a listener that prints
 *                                            "event leader <id> true|false"
 *   latch.start <id>                         ok
 *   latch.await <id> <timeoutMs>             ok true|false
 *   latch.has <id>                           ok true|false
 *   latch.leader <id>                        ok <participant id of the leader>
 *   latch.participants <id>                  ok <participant id> ... (leader first)
 *   latch.path <id>                          ok <our latch node path>
 *   latch.close <id>                         ok
 *
 *   count.new <id> <path> <seed>             SharedCount, started
 *   count.get <id>                           ok <count> <version> (the cached value)
 *   count.read <id>                          as count.get, and keeps it for count.tryset
 *   count.tryset <id> <n>                    trySetCount(value kept by count.read, n): ok true|false
 *   count.set <id> <n>                       setCount(n)
 *   count.close <id>                         ok
 *   along.new <id> <path>                    DistributedAtomicLong (RetryNTimes(1000, 1 ms))
 *   along.add <id> <delta> <times>           add(delta) <times> times, each until it succeeds:
 *                                            ok <last post value>
 *   along.get <id>                           ok <value>
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.zookeeper.CreateMode;

public final class CuratorTool {
    /** Commands that run on their handle's own thread. */
    private static final Set<String> THREAD_BOUND = new HashSet<>(Arrays.asList(
            "mutex.acquire", "mutex.release", "mutex.node",
            "sem.acquire", "sem.release", "sem.releaseall",
            "semmutex.acquire", "semmutex.release",
            "rw.readacquire", "rw.readrelease", "rw.writeacquire", "rw.writerelease",
            "dbarrier.enter", "dbarrier.leave"));

    private static PrintStream out;
    private static CuratorFramework client;
    private static final Map<String, Handle> handles = new ConcurrentHashMap<>();
    private static final ExecutorService pool = Executors.newCachedThreadPool(daemons("pool"));

    /** A lock whose lock node path can be read (getLockPath is protected). */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework c, String path) {
            super(c, path);
        }

        String node() {
            return getLockPath();
        }
    }

    /** One named recipe object and the thread its thread-bound commands run on. */
    static final class Handle {
        final String id;
        final Object recipe;
        final ExecutorService thread;
        final List<Lease> leases = new ArrayList<>(); // guarded by itself

        Handle(String id, Object recipe) {
            this.id = id;
            this.recipe = recipe;
            this.thread = Executors.newSingleThreadExecutor(daemons("handle-" + id));
        }
    }

    /** A failure whose message is the whole answer. */
    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String msg) {
            super(msg);
        }
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err); // nothing but the protocol on the real stdout
        if (args.length < 2) {
            emit("err usage: CuratorTool <connectString> <sessionTimeoutMs>");
            System.exit(2);
        }
        int sessionMs = Integer.parseInt(args[1]);
        client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(Math.max(1000, Math.min(sessionMs, 15000)))
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> emit("event state " + state.name()));
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            emit("err not connected to " + args[0] + " after 60s");
            System.exit(1);
        }
        emit("ready " + sessionId());

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f[0].equals("close")) {
                emit("ok");
                shutdown(0);
            }
            if (f[0].equals("async")) {
                if (f.length < 3) {
                    emit("err usage: async <tag> <command...>");
                    continue;
                }
                String tag = f[1];
                String[] cmd = Arrays.copyOfRange(f, 2, f.length);
                try {
                    submit(cmd, () -> emit("event done " + tag + " " + run(cmd)));
                    emit("ok");
                } catch (UsageException e) {
                    emit("err " + oneLine(e.getMessage()));
                }
                continue;
            }
            String answer;
            try {
                if (THREAD_BOUND.contains(f[0])) {
                    Future<String> fut = handle(f).thread.submit(() -> run(f));
                    answer = fut.get();
                } else {
                    answer = run(f);
                }
            } catch (Exception e) {
                answer = failure(e);
            }
            emit(answer);
        }
        shutdown(0); // stdin closed: the test process is gone
    }

    /** submit runs task on the handle's thread for thread-bound commands, else on the pool. */
    private static void submit(String[] f, Runnable task) throws UsageException {
        if (THREAD_BOUND.contains(f[0])) {
            handle(f).thread.submit(task);
        } else {
            pool.submit(task);
        }
    }

    /** run executes one command and returns its answer line; it never throws. */
    private static String run(String[] f) {
        try {
            String r = exec(f);
            return r == null || r.isEmpty() ? "ok" : "ok " + r;
        } catch (Throwable e) {
            return failure(e);
        }
    }

    private static String failure(Throwable e) {
        if (e instanceof ExecutionException && e.getCause() != null) {
            e = e.getCause();
        }
        if (e instanceof UsageException) {
            return "err " + oneLine(e.getMessage());
        }
        e.printStackTrace(System.err);
        String msg = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        return "err " + oneLine(msg);
    }

    private static String exec(String[] f) throws Exception {
        String cmd = f[0];
        switch (cmd) {
            case "ping":
                return "pong";
            case "session":
                return sessionId();

            case "mutex.new":
                need(f, 3);
                add(f[1], new Mutex(client, f[2]));
                return null;
            case "mutex.revocable": {
                need(f, 2);
                Handle h = handle(f);
                boolean release = f.length > 2 && f[2].equals("release");
                mutex(h).makeRevocable(lock -> {
                    emit("event revoke " + h.id);
                    if (release) {
                        h.thread.submit(() -> {
                            try {
                                lock.release();
                                emit("event revoked " + h.id + " ok");
                            } catch (Exception e) {
                                emit("event revoked " + h.id + " " + failure(e));
                            }
                        });
                    }
                });
                return null;
            }
            case "mutex.acquire": {
                need(f, 3);
                Mutex m = mutex(handle(f));
                long ms = millis(f[2]);
                if (ms < 0) {
                    m.acquire();
                    return "true";
                }
                return String.valueOf(m.acquire(ms, TimeUnit.MILLISECONDS));
            }
            case "mutex.release":
                need(f, 2);
                mutex(handle(f)).release();
                return null;
            case "mutex.node": {
                need(f, 2);
                String p = mutex(handle(f)).node();
                return p == null ? "" : p;
            }
            case "mutex.owned":
                need(f, 2);
                return String.valueOf(mutex(handle(f)).isAcquiredInThisProcess());
            case "mutex.participants":
                need(f, 2);
                return join(mutex(handle(f)).getParticipantNodes());
            case "revoke":
                need(f, 2);
                Revoker.attemptRevoke(client, f[1]);
                return null;

            case "sem.new":
                need(f, 4);
                add(f[1], new InterProcessSemaphoreV2(client, f[2], Integer.parseInt(f[3])));
                return null;
            case "sem.acquire": {
                need(f, 4);
                Handle h = handle(f);
                int n = Integer.parseInt(f[2]);
                long ms = millis(f[3]);
                Collection<Lease> got = ms < 0 ? sem(h).acquire(n) : sem(h).acquire(n, ms, TimeUnit.MILLISECONDS);
                if (got == null) {
                    return "0";
                }
                synchronized (h.leases) {
                    h.leases.addAll(got);
                }
                return String.valueOf(got.size());
            }
            case "sem.release": {
                need(f, 2);
                Handle h = handle(f);
                Lease l;
                synchronized (h.leases) {
                    if (h.leases.isEmpty()) {
                        throw new UsageException("sem " + h.id + ": no lease held");
                    }
                    l = h.leases.remove(0);
                }
                sem(h).returnLease(l);
                return null;
            }
            case "sem.releaseall": {
                need(f, 2);
                Handle h = handle(f);
                List<Lease> all;
                synchronized (h.leases) {
                    all = new ArrayList<>(h.leases);
                    h.leases.clear();
                }
                sem(h).returnAll(all);
                return null;
            }
            case "sem.leases": {
                need(f, 2);
                Handle h = handle(f);
                sem(h);
                List<String> names = new ArrayList<>();
                synchronized (h.leases) {
                    for (Lease l : h.leases) {
                        names.add(l.getNodeName());
                    }
                }
                return join(names);
            }
            case "sem.participants":
                need(f, 2);
                return join(sem(handle(f)).getParticipantNodes());

            case "semmutex.new":
                need(f, 3);
                add(f[1], new InterProcessSemaphoreMutex(client, f[2]));
                return null;
            case "semmutex.acquire": {
                need(f, 3);
                InterProcessSemaphoreMutex m = semMutex(handle(f));
                long ms = millis(f[2]);
                if (ms < 0) {
                    m.acquire();
                    return "true";
                }
                return String.valueOf(m.acquire(ms, TimeUnit.MILLISECONDS));
            }
            case "semmutex.release":
                need(f, 2);
                semMutex(handle(f)).release();
                return null;
            case "semmutex.owned":
                need(f, 2);
                return String.valueOf(semMutex(handle(f)).isAcquiredInThisProcess());

            case "rw.new":
                need(f, 3);
                add(f[1], new InterProcessReadWriteLock(client, f[2]));
                return null;
            case "rw.readacquire":
            case "rw.writeacquire": {
                need(f, 3);
                InterProcessReadWriteLock rw = rw(handle(f));
                InterProcessMutex m = cmd.equals("rw.readacquire") ? rw.readLock() : rw.writeLock();
                long ms = millis(f[2]);
                if (ms < 0) {
                    m.acquire();
                    return "true";
                }
                return String.valueOf(m.acquire(ms, TimeUnit.MILLISECONDS));
            }
            case "rw.readrelease":
                need(f, 2);
                rw(handle(f)).readLock().release();
                return null;
            case "rw.writerelease":
                need(f, 2);
                rw(handle(f)).writeLock().release();
                return null;
            case "rw.readers":
                need(f, 2);
                return join(rw(handle(f)).readLock().getParticipantNodes());
            case "rw.writers":
                need(f, 2);
                return join(rw(handle(f)).writeLock().getParticipantNodes());

            case "barrier.set":
                need(f, 2);
                new DistributedBarrier(client, f[1]).setBarrier();
                return null;
            case "barrier.remove":
                need(f, 2);
                new DistributedBarrier(client, f[1]).removeBarrier();
                return null;
            case "barrier.wait": {
                need(f, 3);
                DistributedBarrier b = new DistributedBarrier(client, f[1]);
                long ms = millis(f[2]);
                if (ms < 0) {
                    b.waitOnBarrier();
                    return "true";
                }
                return String.valueOf(b.waitOnBarrier(ms, TimeUnit.MILLISECONDS));
            }

            case "dbarrier.new":
                need(f, 4);
                add(f[1], new DistributedDoubleBarrier(client, f[2], Integer.parseInt(f[3])));
                return null;
            case "dbarrier.enter":
            case "dbarrier.leave": {
                need(f, 3);
                DistributedDoubleBarrier b = as(handle(f), DistributedDoubleBarrier.class);
                boolean enter = cmd.equals("dbarrier.enter");
                long ms = millis(f[2]);
                if (ms < 0) {
                    if (enter) {
                        b.enter();
                    } else {
                        b.leave();
                    }
                    return "true";
                }
                return String.valueOf(enter ? b.enter(ms, TimeUnit.MILLISECONDS) : b.leave(ms, TimeUnit.MILLISECONDS));
            }

            case "latch.new": {
                need(f, 4);
                String id = f[1];
                LeaderLatch l = new LeaderLatch(client, f[2], f[3]);
                l.addListener(new LeaderLatchListener() {
                    @Override
                    public void isLeader() {
                        emit("event leader " + id + " true");
                    }

                    @Override
                    public void notLeader() {
                        emit("event leader " + id + " false");
                    }
                });
                add(id, l);
                return null;
            }
            case "latch.start":
                need(f, 2);
                latch(handle(f)).start();
                return null;
            case "latch.await": {
                need(f, 3);
                LeaderLatch l = latch(handle(f));
                long ms = millis(f[2]);
                if (ms < 0) {
                    l.await();
                    return "true";
                }
                return String.valueOf(l.await(ms, TimeUnit.MILLISECONDS));
            }
            case "latch.has":
                need(f, 2);
                return String.valueOf(latch(handle(f)).hasLeadership());
            case "latch.leader":
                need(f, 2);
                return latch(handle(f)).getLeader().getId();
            case "latch.participants": {
                need(f, 2);
                List<String> ids = new ArrayList<>();
                for (Participant p : latch(handle(f)).getParticipants()) {
                    ids.add(p.getId());
                }
                return join(ids);
            }
            case "latch.path": {
                need(f, 2);
                String p = latch(handle(f)).getOurPath();
                return p == null ? "" : p;
            }
            case "latch.close":
                need(f, 2);
                latch(handle(f)).close();
                return null;

            default:
                if (cmd.startsWith("count.") || cmd.startsWith("along.")) {
                    return execCounters(f);
                }
                if (cmd.startsWith("group.") || cmd.startsWith("pnode.") || cmd.startsWith("ttlnode.")) {
                    return execNodes(f);
                }
                if (cmd.startsWith("disc.")) {
                    return DiscoveryDriver.exec(client, f, CuratorTool::emit);
                }
                throw new UsageException("unknown command " + cmd);
        }
    }

    /** kept holds what count.read read, per handle id, for count.tryset. */
    private static final Map<String, VersionedValue<Integer>> kept = new ConcurrentHashMap<>();

    /** execCounters runs the count.* and along.* commands. */
    private static String execCounters(String[] f) throws Exception {
        switch (f[0]) {
            case "count.new": {
                need(f, 4);
                SharedCount sc = new SharedCount(client, f[2], Integer.parseInt(f[3]));
                sc.start();
                add(f[1], sc);
                return null;
            }
            case "count.get":
            case "count.read": {
                need(f, 2);
                VersionedValue<Integer> v = as(handle(f), SharedCount.class).getVersionedValue();
                if (f[0].equals("count.read")) {
                    kept.put(f[1], v);
                }
                return v.getValue() + " " + v.getVersion();
            }
            case "count.tryset": {
                need(f, 3);
                VersionedValue<Integer> v = kept.get(f[1]);
                if (v == null) {
                    throw new UsageException("count.tryset " + f[1] + ": no count.read before");
                }
                return String.valueOf(as(handle(f), SharedCount.class).trySetCount(v, Integer.parseInt(f[2])));
            }
            case "count.set":
                need(f, 3);
                as(handle(f), SharedCount.class).setCount(Integer.parseInt(f[2]));
                return null;
            case "count.close":
                need(f, 2);
                as(handle(f), SharedCount.class).close();
                return null;
            case "along.new":
                need(f, 3);
                add(f[1], new DistributedAtomicLong(client, f[2], new RetryNTimes(1000, 1)));
                return null;
            case "along.add": {
                need(f, 4);
                DistributedAtomicLong l = as(handle(f), DistributedAtomicLong.class);
                long delta = Long.parseLong(f[2]);
                int times = Integer.parseInt(f[3]);
                long last = 0;
                for (int i = 0; i < times; i++) {
                    AtomicValue<Long> r;
                    do {
                        r = l.add(delta);
                    } while (!r.succeeded());
                    last = r.postValue();
                }
                return String.valueOf(last);
            }
            case "along.get": {
                need(f, 2);
                AtomicValue<Long> r = as(handle(f), DistributedAtomicLong.class).get();
                return String.valueOf(r.postValue());
            }
            default:
                throw new UsageException("unknown command " + f[0]);
        }
    }

    /** execNodes runs the group.* and pnode.* commands (GroupMember, PersistentNode). */
    private static String execNodes(String[] f) throws Exception {
        switch (f[0]) {
            case "group.new": {
                need(f, 5);
                GroupMember m = new GroupMember(client, f[2], f[3], f[4].getBytes(StandardCharsets.UTF_8));
                m.start();
                add(f[1], m);
                return null;
            }
            case "group.members": {
                need(f, 2);
                Map<String, byte[]> cur = as(handle(f), GroupMember.class).getCurrentMembers();
                List<String> out = new ArrayList<>();
                for (Map.Entry<String, byte[]> e : cur.entrySet()) {
                    out.add(e.getKey() + "=" + new String(e.getValue(), StandardCharsets.UTF_8));
                }
                out.sort(null);
                return String.join(" ", out);
            }
            case "group.setdata":
                need(f, 3);
                as(handle(f), GroupMember.class).setThisData(f[2].getBytes(StandardCharsets.UTF_8));
                return null;
            case "group.close":
                need(f, 2);
                as(handle(f), GroupMember.class).close();
                return null;
            case "pnode.new": {
                need(f, 6);
                PersistentNode n = new PersistentNode(client, CreateMode.valueOf(f[2]), Boolean.parseBoolean(f[3]),
                        f[4], f[5].getBytes(StandardCharsets.UTF_8));
                n.start();
                add(f[1], n);
                return null;
            }
            case "pnode.wait":
                need(f, 3);
                return String.valueOf(as(handle(f), PersistentNode.class).waitForInitialCreate(millis(f[2]), TimeUnit.MILLISECONDS));
            case "pnode.path": {
                need(f, 2);
                String p = as(handle(f), PersistentNode.class).getActualPath();
                return p == null ? "" : p;
            }
            case "pnode.setdata":
                need(f, 3);
                as(handle(f), PersistentNode.class).setData(f[2].getBytes(StandardCharsets.UTF_8));
                return null;
            case "pnode.close":
                need(f, 2);
                as(handle(f), PersistentNode.class).close();
                return null;
            case "ttlnode.new": {
                need(f, 5);
                PersistentTtlNode n = new PersistentTtlNode(client, f[2], millis(f[3]), f[4].getBytes(StandardCharsets.UTF_8));
                n.start();
                add(f[1], n);
                return null;
            }
            case "ttlnode.wait":
                need(f, 3);
                return String.valueOf(as(handle(f), PersistentTtlNode.class).waitForInitialCreate(millis(f[2]), TimeUnit.MILLISECONDS));
            case "ttlnode.close":
                need(f, 2);
                as(handle(f), PersistentTtlNode.class).close();
                return null;
            default:
                throw new UsageException("unknown command " + f[0]);
        }
    }

    private static void need(String[] f, int n) throws UsageException {
        if (f.length < n) {
            throw new UsageException(f[0] + ": want " + (n - 1) + " arguments, got " + (f.length - 1));
        }
    }

    private static long millis(String s) throws UsageException {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new UsageException("bad timeoutMs " + s);
        }
    }

    private static void add(String id, Object recipe) throws UsageException {
        if (handles.putIfAbsent(id, new Handle(id, recipe)) != null) {
            throw new UsageException("handle " + id + " exists");
        }
    }

    private static Handle handle(String[] f) throws UsageException {
        if (f.length < 2) {
            throw new UsageException(f[0] + ": missing handle id");
        }
        Handle h = handles.get(f[1]);
        if (h == null) {
            throw new UsageException("no handle " + f[1]);
        }
        return h;
    }

    private static <T> T as(Handle h, Class<T> c) throws UsageException {
        if (!c.isInstance(h.recipe)) {
            throw new UsageException("handle " + h.id + " is a " + h.recipe.getClass().getSimpleName()
                    + ", not a " + c.getSimpleName());
        }
        return c.cast(h.recipe);
    }

    private static Mutex mutex(Handle h) throws UsageException {
        return as(h, Mutex.class);
    }

    private static InterProcessSemaphoreV2 sem(Handle h) throws UsageException {
        return as(h, InterProcessSemaphoreV2.class);
    }

    private static InterProcessSemaphoreMutex semMutex(Handle h) throws UsageException {
        return as(h, InterProcessSemaphoreMutex.class);
    }

    private static InterProcessReadWriteLock rw(Handle h) throws UsageException {
        return as(h, InterProcessReadWriteLock.class);
    }

    private static LeaderLatch latch(Handle h) throws UsageException {
        return as(h, LeaderLatch.class);
    }

    private static String join(Collection<String> items) {
        return String.join(" ", items);
    }

    private static String sessionId() throws Exception {
        return Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.replace('\r', ' ').replace('\n', ' ');
    }

    private static void emit(String line) {
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }

    /** shutdown closes the client (bounded in time, so the session ends now) and exits. */
    private static void shutdown(int code) {
        Thread t = new Thread(() -> {
            try {
                client.close();
            } catch (Throwable e) {
                e.printStackTrace(System.err);
            }
        });
        t.setDaemon(true);
        t.start();
        try {
            t.join(3000);
        } catch (InterruptedException ignored) {
        }
        out.flush();
        Runtime.getRuntime().halt(code);
    }

    private static ThreadFactory daemons(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
