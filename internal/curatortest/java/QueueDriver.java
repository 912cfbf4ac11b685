/*
 * QueueDriver drives Apache Curator's queue recipes (DistributedQueue, DistributedIdQueue,
 * DistributedPriorityQueue, DistributedDelayQueue, SimpleDistributedQueue) from a line
 * protocol, so that Go tests can put and take items next to the Go queues on the same
 * paths. It speaks CuratorTool's protocol: "ready <session>" once connected, then one
 * answer line per command ("ok [result]" or "err <message>"), and "event ..." lines at
 * any time. Items are UTF-8 strings without spaces.
 *
 * Usage: java -cp <classes>:<curator jars> QueueDriver <connectString> <sessionTimeoutMs>
 *
 *   ping                                    ok pong
 *   session                                 ok <session id in hex>
 *   close                                   ok, then closes the client and exits
 *
 *   q.new <id> <kind> <path> <lockPath|-> produce|consume|hold
 *       kind: plain, id, priority or delay. "consume" records every item it is handed
 *       (q.take returns them); "hold" prints "event holding <id> <item>" for the first
 *       item and then never returns from the consumer (for kill-mid-item tests).
 *       Puts are synchronous (putInBackground false).
 *   q.put <id> <item> [arg]                 arg: the id, the priority or the due epoch ms
 *   q.putmulti <id> <item,item,...> [arg]
 *   q.take <id> <timeoutMs>                 ok <item>@<epoch ms when handed over>, or ok -
 *   q.remove <id> <itemId>                  ok <count> (id queues)
 *   q.close <id>
 *
 *   sq.offer <path> <item>                  SimpleDistributedQueue
 *   sq.take <path> <timeoutMs>              ok <item> or ok - (poll with a timeout)
 *   sq.peek <path>                          ok <item> or ok -
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBase;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class QueueDriver {
    private static PrintStream out;
    private static CuratorFramework client;

    /** One queue handle: the Curator queue and what its consumer was handed. */
    private static final class Handle {
        final String kind;
        QueueBase<String> queue;
        final LinkedBlockingQueue<String> got = new LinkedBlockingQueue<>();

        Handle(String kind) {
            this.kind = kind;
        }
    }

    private static final Map<String, Handle> handles = new ConcurrentHashMap<>();

    private static final QueueSerializer<String> STRINGS = new QueueSerializer<String>() {
        @Override
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        if (args.length < 2) {
            emit("err usage: QueueDriver <connectString> <sessionTimeoutMs>");
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
        emit("ready " + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId()));
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
                shutdown();
            }
            String answer;
            try {
                String r = exec(f);
                answer = r == null || r.isEmpty() ? "ok" : "ok " + r;
            } catch (Throwable e) {
                e.printStackTrace(System.err);
                String msg = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
                answer = "err " + msg.replace('\n', ' ').replace('\r', ' ');
            }
            emit(answer);
        }
        shutdown();
    }

    private static String exec(String[] f) throws Exception {
        switch (f[0]) {
            case "ping":
                return "pong";
            case "session":
                return Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
            case "q.new":
                need(f, 6);
                return newQueue(f[1], f[2], f[3], f[4], f[5]);
            case "q.put":
            case "q.putmulti": {
                need(f, 3);
                Handle h = handle(f[1]);
                String arg = f.length > 3 ? f[3] : null;
                put(h, f[0].equals("q.putmulti"), f[2], arg);
                return null;
            }
            case "q.take": {
                need(f, 3);
                String item = handle(f[1]).got.poll(Long.parseLong(f[2]), TimeUnit.MILLISECONDS);
                return item == null ? "-" : item;
            }
            case "q.remove": {
                need(f, 3);
                Handle h = handle(f[1]);
                return String.valueOf(((DistributedIdQueue<String>) h.queue).remove(f[2]));
            }
            case "q.close":
                need(f, 2);
                handle(f[1]).queue.close();
                handles.remove(f[1]);
                return null;
            case "sq.offer":
                need(f, 3);
                new SimpleDistributedQueue(client, f[1]).offer(f[2].getBytes(StandardCharsets.UTF_8));
                return null;
            case "sq.take": {
                need(f, 3);
                byte[] b = new SimpleDistributedQueue(client, f[1]).poll(Long.parseLong(f[2]), TimeUnit.MILLISECONDS);
                return b == null ? "-" : new String(b, StandardCharsets.UTF_8);
            }
            case "sq.peek": {
                need(f, 2);
                byte[] b = new SimpleDistributedQueue(client, f[1]).peek();
                return b == null ? "-" : new String(b, StandardCharsets.UTF_8);
            }
            default:
                throw new IllegalArgumentException("unknown command " + f[0]);
        }
    }

    private static String newQueue(String id, String kind, String path, String lock, String mode) throws Exception {
        Handle h = new Handle(kind);
        QueueConsumer<String> consumer = null;
        if (mode.equals("consume")) {
            consumer = new QueueConsumer<String>() {
                @Override
                public void consumeMessage(String item) {
                    h.got.add(item + "@" + System.currentTimeMillis());
                }

                @Override
                public void stateChanged(CuratorFramework c, ConnectionState s) {}
            };
        } else if (mode.equals("hold")) {
            AtomicBoolean first = new AtomicBoolean(true);
            consumer = new QueueConsumer<String>() {
                @Override
                public void consumeMessage(String item) throws Exception {
                    if (first.getAndSet(false)) {
                        emit("event holding " + id + " " + item);
                        new CountDownLatch(1).await(); // until the process is killed
                    }
                }

                @Override
                public void stateChanged(CuratorFramework c, ConnectionState s) {}
            };
        } else if (!mode.equals("produce")) {
            throw new IllegalArgumentException("mode must be produce, consume or hold: " + mode);
        }
        QueueBuilder<String> b = QueueBuilder.builder(client, consumer, STRINGS, path).putInBackground(false);
        if (!lock.equals("-")) {
            b = b.lockPath(lock);
        }
        switch (kind) {
            case "plain":
                h.queue = b.buildQueue();
                break;
            case "id":
                h.queue = b.buildIdQueue();
                break;
            case "priority":
                h.queue = b.buildPriorityQueue(0);
                break;
            case "delay":
                h.queue = b.buildDelayQueue();
                break;
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
        h.queue.start();
        if (handles.putIfAbsent(id, h) != null) {
            h.queue.close();
            throw new IllegalArgumentException("handle " + id + " exists");
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    private static void put(Handle h, boolean multi, String items, String arg) throws Exception {
        List<String> list = new ArrayList<>();
        for (String s : (multi ? items.split(",") : new String[] {items})) {
            list.add(s);
        }
        int[] next = {0};
        MultiItem<String> mi = () -> next[0] < list.size() ? list.get(next[0]++) : null;
        switch (h.kind) {
            case "plain":
                if (multi) {
                    ((DistributedQueue<String>) h.queue).putMulti(mi);
                } else {
                    ((DistributedQueue<String>) h.queue).put(items);
                }
                return;
            case "id":
                ((DistributedIdQueue<String>) h.queue).put(items, arg);
                return;
            case "priority":
                if (multi) {
                    ((DistributedPriorityQueue<String>) h.queue).putMulti(mi, Integer.parseInt(arg));
                } else {
                    ((DistributedPriorityQueue<String>) h.queue).put(items, Integer.parseInt(arg));
                }
                return;
            case "delay":
                if (multi) {
                    ((DistributedDelayQueue<String>) h.queue).putMulti(mi, Long.parseLong(arg));
                } else {
                    ((DistributedDelayQueue<String>) h.queue).put(items, Long.parseLong(arg));
                }
                return;
            default:
                throw new IllegalStateException(h.kind);
        }
    }

    private static Handle handle(String id) {
        Handle h = handles.get(id);
        if (h == null) {
            throw new IllegalArgumentException("no handle " + id);
        }
        return h;
    }

    private static void need(String[] f, int n) {
        if (f.length < n) {
            throw new IllegalArgumentException(f[0] + ": want " + (n - 1) + " arguments, got " + (f.length - 1));
        }
    }

    private static void emit(String line) {
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }

    private static void shutdown() {
        Thread t = new Thread(() -> {
            try {
                for (Handle h : handles.values()) {
                    h.queue.close();
                }
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
        Runtime.getRuntime().halt(0);
    }
}
