/*
 * CuratorCacheInit measures the start of one Apache Curator 5.4 CuratorCache on a tree that
 * is already there (zkbench's cache-init workload). It only uses Curator's public
 * API.
 *
 * Usage: java -cp <classes>:<curator jars> CuratorCacheInit <connectString> <sessionTimeoutMs> <basePath>
 *
 * It starts one CuratorFramework (ExponentialBackoffRetry(100 ms, 10)), waits until it is
 * connected, reads the JVM's heap in use after a GC, then talks with its caller on
 * stdin/stdout, one line at a time:
 *
 *   out "ready"     the session is up
 *   in  "go"        a CuratorCache of <basePath> starts; the clock runs until Initialized
 *   out {"cached":N,"seconds":S,"heap_bytes":B}
 *                   the nodes the cache holds at Initialized, the time to it, and the heap in
 *                   use after a GC less that before the cache started (or "err <message>")
 *   in  "updates N MARKER"
 *                   from now on the cache's creations and changes whose data starts with
 *                   MARKER are counted, once per path
 *   out "armed"     (the caller then changes N nodes' data to start with MARKER)
 *   out "heard"     once N paths were heard (or "err <message>" after 10 minutes)
 *   in  "close"     the cache and the client are closed and the JVM exits (so at end of input)
 *
 * Curator 5.4 stops its initial build at 65 535 pending reads (CURATOR-690, fixed in 5.6):
 * on a larger tree it reports Initialized with fewer nodes than the tree holds.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorCacheInit {
    static long heapAfterGC() throws InterruptedException {
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return mem.getHeapMemoryUsage().getUsed();
    }

    // The updates being counted: armed by "updates N MARKER".
    static volatile byte[] marker;
    static volatile int wanted;
    static final Set<String> heard = ConcurrentHashMap.newKeySet();
    static volatile CountDownLatch allHeard = new CountDownLatch(1);

    static void onData(ChildData node) {
        byte[] m = marker;
        byte[] d = node.getData();
        if (m == null || d == null || d.length < m.length) {
            return;
        }
        for (int i = 0; i < m.length; i++) {
            if (d[i] != m[i]) {
                return;
            }
        }
        if (heard.add(node.getPath()) && heard.size() >= wanted) {
            allHeard.countDown();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorCacheInit <connectString> <sessionTimeoutMs> <basePath>");
            System.exit(2);
        }
        String connect = args[0];
        int sessionMs = Integer.parseInt(args[1]);
        String base = args[2];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        CuratorFramework client = CuratorFrameworkFactory.builder().connectString(connect)
            .sessionTimeoutMs(sessionMs).connectionTimeoutMs(15000)
            .retryPolicy(new ExponentialBackoffRetry(100, 10)).build();
        CuratorCache cache = null;
        int status = 0;
        try {
            client.start();
            if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected within 60 s");
            }
            long before = heapAfterGC();
            System.out.println("ready");
            System.out.flush();
            String line = in.readLine();
            if (!"go".equals(line)) {
                return;
            }
            CountDownLatch initialized = new CountDownLatch(1);
            cache = CuratorCache.build(client, base);
            cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(initialized::countDown)
                .forCreatesAndChanges((old, node) -> onData(node)).build());
            long t0 = System.nanoTime();
            cache.start();
            if (!initialized.await(30, TimeUnit.MINUTES)) {
                throw new IllegalStateException("no Initialized within 30 minutes");
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            int cached = cache.size();
            long heap = heapAfterGC() - before;
            System.out.println(String.format(Locale.ROOT, "{\"cached\":%d,\"seconds\":%.3f,\"heap_bytes\":%d}", cached, seconds, heap));
            System.out.flush();
            while ((line = in.readLine()) != null && !"close".equals(line)) {
                String[] f = line.split(" ");
                if (f.length != 3 || !"updates".equals(f[0])) {
                    throw new IllegalArgumentException("unexpected command " + line);
                }
                heard.clear();
                allHeard = new CountDownLatch(1);
                wanted = Integer.parseInt(f[1]);
                marker = f[2].getBytes(StandardCharsets.UTF_8);
                System.out.println("armed");
                System.out.flush();
                if (!allHeard.await(10, TimeUnit.MINUTES)) {
                    throw new IllegalStateException("heard " + heard.size() + " of " + wanted + " updates within 10 minutes");
                }
                marker = null;
                System.out.println("heard");
                System.out.flush();
            }
        } catch (Exception e) {
            System.out.println("err " + e);
            System.out.flush();
            e.printStackTrace();
            status = 1;
        } finally {
            if (cache != null) {
                cache.close();
            }
            client.close();
        }
        System.exit(status);
    }
}
