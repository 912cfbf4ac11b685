/*
 * CuratorBench runs one of zkbench's workloads (shared/bench/WORKLOADS.md) on Apache Curator
 * 5.4, timing inside the JVM, so that the Go recipes and Curator's are measured the same way
 * on the same server. It only uses Curator's public API.
 *
 * Usage: java -cp <classes>:<curator jars> CuratorBench <connectString> <sessionTimeoutMs>
 *            <workload> <clients> <perClient> <opsPerWorker> <basePath>
 *            [<warmupOpsPerWorker> <warmupBasePath>]
 *
 * It starts <clients> CuratorFrameworks (ExponentialBackoffRetry(100 ms, 10)), one ZooKeeper
 * session each, waits until all are connected, builds each worker's recipe object (one
 * thread per worker, <perClient> workers per client). With a warm-up, each worker first runs
 * <warmupOpsPerWorker> ops of the workload on <warmupBasePath>, unreported and unchecked,
 * so that the JIT has compiled the paths the run takes. Then it talks with its caller on
 * stdin/stdout, one line at a time:
 *
 *   out "ready"                  the sessions are up and the workers wait at the start line
 *   in  "go"                     the workers start; the clock runs until the last finishes
 *   out {"impl":"curator",...}   the result: WORKLOADS.md's JSON line (or "err <message>")
 *   in  "close"                  the clients are closed and the JVM exits (so at end of input)
 *
 * The pause between the result and "close" lets the caller read the server's counters
 * before the sessions' close requests reach it. Nothing else is printed on stdout; errors
 * go to stderr and make the exit status 1.
 *
 * Workloads (per op of each worker; "check" counts the holders in the JVM and a violation
 * when more than allowed are inside):
 *
 *   mutex          own InterProcessMutex on <base>; acquire (timed), check (1), release
 *   semmutex       own InterProcessSemaphoreMutex on <base>; acquire (timed), check (1), release
 *   semaphore      own InterProcessSemaphoreV2 on <base>, 3 leases; acquire 1 (timed), check (3),
 *                  return it
 *   rwread         own InterProcessReadWriteLock on <base>; read acquire (timed), release
 *   rwmixed        as rwread, but a worker's op 10, 20, ... takes the write lock; a writer
 *                  beside anyone, or a reader beside a writer, is a violation
 *   multilock      own InterProcessMultiLock over <base>/a and <base>/b; acquire (timed),
 *                  check (1), release
 *   doublebarrier  op i: DistributedDoubleBarrier <base>/r<i> with clients*perClient members;
 *                  enter + leave (timed), each bounded by BARRIER_STALL_MS
 *   counter-inc    own DistributedAtomicLong on <base> (RetryNTimes(MAX, 0)); increment
 *                  (timed); a failed increment is an error
 *   queue-put      own DistributedQueue (producer only, putInBackground false, no lock path)
 *                  on <base>; put a 16-byte item (timed)
 *   queue-take     <base> filled first with one 16-byte item per op (before "ready"); one
 *                  consuming DistributedQueue per client (no lock path), started by the
 *                  client's first op, all handing their items to one blocking queue; take
 *                  one item from it (timed)
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
    static final int SEMAPHORE_LEASES = 3;
    static final int RW_WRITE_EVERY = 10;
    /**
     * How long one enter or leave of the double barrier may wait. Curator 5.4's
     * DistributedDoubleBarrier has been seen (zkbench, 4x2) to hang with members waiting in
     * leave and in enter for good; a bounded wait turns that into an error instead of a
     * run that never ends.
     */
    static final long BARRIER_STALL_MS = 60_000;

    /** One worker's operation; returns the latency to report, in nanoseconds. */
    interface Op {
        long run() throws Exception;
    }

    /** queue-take: items per worker to fill the base path with, for the ops built next. */
    static int prefillPerWorker;

    static final AtomicInteger holders = new AtomicInteger();
    static final AtomicInteger readers = new AtomicInteger();
    static final AtomicInteger writers = new AtomicInteger();
    static final AtomicLong violations = new AtomicLong();

    static void check(int allowed) {
        if (holders.incrementAndGet() > allowed) {
            violations.incrementAndGet();
        }
        holders.decrementAndGet();
    }

    static void checkRW(boolean write) {
        if (write) {
            if (writers.incrementAndGet() > 1 || readers.get() > 0) {
                violations.incrementAndGet();
            }
            writers.decrementAndGet();
            return;
        }
        readers.incrementAndGet();
        if (writers.get() > 0) {
            violations.incrementAndGet();
        }
        readers.decrementAndGet();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7 && args.length != 9) {
            System.err.println("usage: CuratorBench <connect> <sessionTimeoutMs> <workload> <clients> <perClient> <opsPerWorker> <base> [<warmupOpsPerWorker> <warmupBase>]");
            System.exit(2);
        }
        String connect = args[0];
        int sessionMs = Integer.parseInt(args[1]);
        String workload = args[2];
        int clients = Integer.parseInt(args[3]);
        int perClient = Integer.parseInt(args[4]);
        int perWorker = Integer.parseInt(args[5]);
        String base = args[6];
        int warmupPerWorker = args.length == 9 ? Integer.parseInt(args[7]) : 0;
        String warmupBase = args.length == 9 ? args[8] : null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

        List<CuratorFramework> cfs = new ArrayList<>();
        int status = 0;
        try {
            for (int i = 0; i < clients; i++) {
                CuratorFramework c = CuratorFrameworkFactory.builder()
                        .connectString(connect)
                        .sessionTimeoutMs(sessionMs)
                        .connectionTimeoutMs(Math.max(1000, Math.min(sessionMs, 15000)))
                        .retryPolicy(new ExponentialBackoffRetry(100, 10))
                        .build();
                cfs.add(c);
                c.start();
            }
            for (CuratorFramework c : cfs) {
                if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("not connected to " + connect + " after 60 s");
                }
            }
            int workers = clients * perClient;
            if (warmupPerWorker > 0) {
                prefillPerWorker = warmupPerWorker;
                Op[] wops = new Op[workers];
                for (int ci = 0; ci < clients; ci++) {
                    for (int gi = 0; gi < perClient; gi++) {
                        wops[ci * perClient + gi] = newOp(workload, cfs.get(ci), warmupBase, workers);
                    }
                }
                runAll(wops, warmupPerWorker, new long[workers][], new long[workers], new CountDownLatch(0));
                holders.set(0);
                readers.set(0);
                writers.set(0);
                violations.set(0);
            }
            prefillPerWorker = perWorker;
            Op[] ops = new Op[workers];
            for (int ci = 0; ci < clients; ci++) {
                for (int gi = 0; gi < perClient; gi++) {
                    ops[ci * perClient + gi] = newOp(workload, cfs.get(ci), base, workers);
                }
            }

            System.out.println("ready");
            System.out.flush();
            String line = in.readLine();
            if (!"go".equals(line)) {
                throw new IllegalStateException("expected \"go\", got " + line);
            }
            long[][] lat = new long[workers][];
            long[] finished = new long[workers];
            long t0 = runAll(ops, perWorker, lat, finished, new CountDownLatch(1));
            long last = t0;
            long[] all = new long[workers * perWorker];
            int n = 0;
            for (int w = 0; w < workers; w++) {
                last = Math.max(last, finished[w]);
                System.arraycopy(lat[w], 0, all, n, perWorker);
                n += perWorker;
            }
            Arrays.sort(all);
            double seconds = (last - t0) / 1e9;
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(Locale.ROOT,
                    "{\"impl\":\"curator\",\"workload\":\"%s\",\"clients\":%d,\"per_client\":%d,\"ops\":%d,"
                            + "\"seconds\":%.4f,\"ops_per_s\":%.1f,\"p50_us\":%d,\"p99_us\":%d,\"violations\":%d",
                    workload, clients, perClient, n, seconds, n / seconds,
                    percentile(all, 0.50) / 1000, percentile(all, 0.99) / 1000, violations.get()));
            if (workload.equals("doublebarrier")) {
                sb.append(String.format(Locale.ROOT, ",\"members\":%d,\"rounds\":%d", workers, perWorker));
            }
            sb.append("}");
            System.out.println(sb);
            System.out.flush();
            line = in.readLine();
            if (line != null && !"close".equals(line)) { // end of input counts as close
                throw new IllegalStateException("expected \"close\", got " + line);
            }
        } catch (Throwable e) {
            e.printStackTrace();
            System.out.println("err " + String.valueOf(e).replace('\n', ' '));
            System.out.flush();
            status = 1;
        } finally {
            for (CuratorFramework c : cfs) {
                c.close();
            }
        }
        System.exit(status);
    }

    /**
     * Runs each op perWorker times on its own thread, all starting together, and returns
     * the start time; lat and finished get each worker's latencies and end time. The first
     * failure is thrown at once (the other workers stop after their op; a worker stuck in
     * a recipe is a daemon thread that the JVM's exit ends).
     */
    static long runAll(Op[] ops, int perWorker, long[][] lat, long[] finished, CountDownLatch start) throws Exception {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch waiting = new CountDownLatch(ops.length);
        AtomicInteger running = new AtomicInteger(ops.length);
        CountDownLatch over = new CountDownLatch(1); // all finished, or one failed
        for (int w = 0; w < ops.length; w++) {
            final int wi = w;
            Thread t = new Thread(() -> {
                long[] mine = new long[perWorker];
                try {
                    waiting.countDown();
                    start.await();
                    for (int j = 0; j < perWorker && failure.get() == null; j++) {
                        mine[j] = ops[wi].run();
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, new RuntimeException("worker " + wi + ": " + e, e));
                    over.countDown();
                }
                lat[wi] = mine;
                finished[wi] = System.nanoTime();
                if (running.decrementAndGet() == 0) {
                    over.countDown();
                }
            }, "worker-" + w);
            t.setDaemon(true);
            t.start();
        }
        waiting.await();
        long t0 = System.nanoTime();
        start.countDown();
        over.await();
        if (failure.get() != null) {
            throw new RuntimeException(failure.get().getMessage(), failure.get());
        }
        return t0;
    }

    /** Nearest-rank percentile of sorted, as zkbench's. */
    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(i, sorted.length - 1))];
    }

    static Op newOp(String workload, CuratorFramework c, String base, int members) throws Exception {
        switch (workload) {
        case "mutex": {
            InterProcessMutex m = new InterProcessMutex(c, base);
            return () -> {
                long t0 = System.nanoTime();
                m.acquire();
                long d = System.nanoTime() - t0;
                check(1);
                m.release();
                return d;
            };
        }
        case "semmutex": {
            InterProcessSemaphoreMutex m = new InterProcessSemaphoreMutex(c, base);
            return () -> {
                long t0 = System.nanoTime();
                m.acquire();
                long d = System.nanoTime() - t0;
                check(1);
                m.release();
                return d;
            };
        }
        case "semaphore": {
            InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, base, SEMAPHORE_LEASES);
            return () -> {
                long t0 = System.nanoTime();
                Lease lease = s.acquire();
                long d = System.nanoTime() - t0;
                check(SEMAPHORE_LEASES);
                s.returnLease(lease);
                return d;
            };
        }
        case "rwread":
        case "rwmixed": {
            boolean mixed = workload.equals("rwmixed");
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, base);
            int[] k = {0};
            return () -> {
                k[0]++;
                boolean write = mixed && k[0] % RW_WRITE_EVERY == 0;
                InterProcessMutex side = write ? rw.writeLock() : rw.readLock();
                long t0 = System.nanoTime();
                side.acquire();
                long d = System.nanoTime() - t0;
                if (mixed) {
                    checkRW(write);
                }
                side.release();
                return d;
            };
        }
        case "multilock": {
            InterProcessMultiLock ml = new InterProcessMultiLock(c, Arrays.asList(base + "/a", base + "/b"));
            return () -> {
                long t0 = System.nanoTime();
                ml.acquire();
                long d = System.nanoTime() - t0;
                check(1);
                ml.release();
                return d;
            };
        }
        case "doublebarrier": {
            int[] round = {0};
            return () -> {
                DistributedDoubleBarrier b = new DistributedDoubleBarrier(c, base + "/r" + round[0], members);
                round[0]++;
                long t0 = System.nanoTime();
                if (!b.enter(BARRIER_STALL_MS, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("DistributedDoubleBarrier " + base + "/r" + (round[0] - 1)
                            + ": enter did not return within " + BARRIER_STALL_MS + " ms (Curator's barrier stalled)");
                }
                if (!b.leave(BARRIER_STALL_MS, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("DistributedDoubleBarrier " + base + "/r" + (round[0] - 1)
                            + ": leave did not return within " + BARRIER_STALL_MS + " ms (Curator's barrier stalled)");
                }
                return System.nanoTime() - t0;
            };
        }
        case "counter-inc": {
            DistributedAtomicLong n = new DistributedAtomicLong(c, base, new RetryNTimes(Integer.MAX_VALUE, 0));
            return () -> {
                long t0 = System.nanoTime();
                AtomicValue<Long> v = n.increment();
                long d = System.nanoTime() - t0;
                if (!v.succeeded()) {
                    throw new IllegalStateException("increment did not succeed");
                }
                return d;
            };
        }
        case "queue-put": {
            DistributedQueue<byte[]> q = QueueBuilder.builder(c, null, BYTES, base).putInBackground(false).buildQueue();
            q.start();
            return () -> {
                long t0 = System.nanoTime();
                q.put(QUEUE_ITEM);
                return System.nanoTime() - t0;
            };
        }
        case "queue-take": {
            TakeSide side = takeSide(c, base, members);
            return () -> {
                side.start(c);
                long t0 = System.nanoTime();
                side.items.take();
                return System.nanoTime() - t0;
            };
        }
        default:
            throw new IllegalArgumentException("unknown workload " + workload);
        }
    }

    static final byte[] QUEUE_ITEM = "zkbench-item-16b".getBytes(StandardCharsets.UTF_8);

    static final QueueSerializer<byte[]> BYTES = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) {
            return item;
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }
    };

    /** queue-take's state for one base path: the consumers, one per client, and their items. */
    static final class TakeSide {
        final String base;
        final LinkedBlockingQueue<byte[]> items = new LinkedBlockingQueue<>();
        final Map<CuratorFramework, DistributedQueue<byte[]>> consumers = new HashMap<>();

        TakeSide(String base) {
            this.base = base;
        }

        /** start starts client c's consumer, once. */
        synchronized void start(CuratorFramework c) throws Exception {
            if (consumers.containsKey(c)) {
                return;
            }
            QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
                @Override
                public void consumeMessage(byte[] item) {
                    items.add(item);
                }

                @Override
                public void stateChanged(CuratorFramework cf, ConnectionState s) {}
            };
            DistributedQueue<byte[]> q = QueueBuilder.builder(c, consumer, BYTES, base).buildQueue();
            consumers.put(c, q);
            q.start();
        }
    }

    static final Map<String, TakeSide> takeSides = new HashMap<>();

    /** takeSide returns base's TakeSide, filling base with one item per op on first use. */
    static synchronized TakeSide takeSide(CuratorFramework c, String base, int workers) throws Exception {
        TakeSide side = takeSides.get(base);
        if (side != null) {
            return side;
        }
        DistributedQueue<byte[]> filler = QueueBuilder.builder(c, null, BYTES, base).buildQueue();
        filler.start();
        for (int i = 0; i < workers * prefillPerWorker; i++) {
            filler.put(QUEUE_ITEM);
        }
        if (!filler.flushPuts(120, TimeUnit.SECONDS)) {
            throw new IllegalStateException("queue-take: filling " + base + " took more than 120 s");
        }
        filler.close();
        side = new TakeSide(base);
        takeSides.put(base, side);
        return side;
    }
}
