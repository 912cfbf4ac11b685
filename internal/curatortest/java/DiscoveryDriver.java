/*
 * DiscoveryDriver runs Curator's service discovery (curator-x-discovery 5.4) for CuratorTool:
 * CuratorTool hands it every command that starts with "disc.". Instances travel as their
 * JSON, base64-encoded (JSON has spaces), written by a JsonInstanceSerializer in full mode
 * (with "enabled"), so that the Go side can compare every field.
 *
 *   disc.new <id> <basePath> <details|map>     a started ServiceDiscovery whose payload class
 *                                              is DiscoveryDriver$Details or java.util.Map
 *   disc.register <id> <name> <address> <port> <sslPort|-> <TYPE> <uriSpec|-> <description> [k=v...]
 *                                              registers an instance built with Curator's builder;
 *                                              the payload is a Details (description, metadata
 *                                              k=v) or a Map (description=..., k=v): ok <json>
 *   disc.unregister <id> <instanceId>          unregisters a registered instance
 *   disc.names <id>                            ok <name> ... (queryForNames, sorted)
 *   disc.instances <id> <name>                 ok <json> ... (queryForInstances, sorted by id)
 *   disc.instance <id> <name> <instanceId>     ok <json> (nothing when there is none)
 *   disc.provider.new <pid> <id> <name>        a started ServiceProvider (round robin)
 *   disc.provider.get <pid>                    ok <json> (nothing when none)
 *   disc.provider.all <pid>                    ok <json> ... (sorted by id)
 *   disc.cache.new <cid> <id> <name>           a started ServiceCache; each cacheChanged prints
 *                                              "event disccache <cid> <id>,<id>..." (ids sorted,
 *                                              "-" for none)
 *   disc.cache.ids <cid>                       ok <id> ... (sorted)
 *   disc.close <id|pid|cid>                    closes it
 */

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceInstanceBuilder;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.framework.state.ConnectionState;

public final class DiscoveryDriver {
    /** A typed payload, as Spring Cloud Zookeeper's ZookeeperInstance is one. */
    public static final class Details {
        public String description;
        public Map<String, String> metadata = new LinkedHashMap<>();
    }

    private static final Map<String, Object> objects = new ConcurrentHashMap<>();
    private static final Map<String, Class<?>> payloadClasses = new ConcurrentHashMap<>();

    private DiscoveryDriver() {
    }

    static String exec(CuratorFramework client, String[] f, Consumer<String> emit) throws Exception {
        switch (f[0]) {
            case "disc.new": {
                need(f, 4);
                Class<?> payload = payloadClass(f[3]);
                ServiceDiscovery<Object> d = ServiceDiscoveryBuilder.builder(Object.class)
                        .client(client).basePath(f[2])
                        .serializer(new JsonInstanceSerializer<Object>(cast(payload)))
                        .build();
                d.start();
                put(f[1], d);
                payloadClasses.put(f[1], payload);
                return null;
            }
            case "disc.register": {
                need(f, 9);
                ServiceDiscovery<Object> d = disc(f[1]);
                ServiceInstanceBuilder<Object> b = ServiceInstance.builder();
                b.name(f[2]).address(f[3]).port(Integer.parseInt(f[4]));
                if (!f[5].equals("-")) {
                    b.sslPort(Integer.parseInt(f[5]));
                }
                b.serviceType(ServiceType.valueOf(f[6]));
                if (!f[7].equals("-")) {
                    b.uriSpec(new UriSpec(f[7]));
                }
                Map<String, String> meta = new LinkedHashMap<>();
                for (int i = 9; i < f.length; i++) {
                    String[] kv = f[i].split("=", 2);
                    meta.put(kv[0], kv.length > 1 ? kv[1] : "");
                }
                if (payloadClasses.get(f[1]) == Details.class) {
                    Details p = new Details();
                    p.description = f[8];
                    p.metadata = meta;
                    b.payload(p);
                } else {
                    Map<String, String> p = new LinkedHashMap<>();
                    p.put("description", f[8]);
                    p.putAll(meta);
                    b.payload(p);
                }
                ServiceInstance<Object> inst = b.build();
                d.registerService(inst);
                return json(inst);
            }
            case "disc.unregister": {
                need(f, 3);
                ServiceDiscovery<Object> d = disc(f[1]);
                for (String name : d.queryForNames()) {
                    ServiceInstance<Object> inst = d.queryForInstance(name, f[2]);
                    if (inst != null) {
                        d.unregisterService(inst);
                        return null;
                    }
                }
                throw new IllegalArgumentException("no instance " + f[2]);
            }
            case "disc.names": {
                need(f, 2);
                List<String> names = new ArrayList<>(disc(f[1]).queryForNames());
                names.sort(null);
                return String.join(" ", names);
            }
            case "disc.instances": {
                need(f, 3);
                ServiceDiscovery<Object> d = disc(f[1]);
                return jsons(d.queryForInstances(f[2]));
            }
            case "disc.instance": {
                need(f, 4);
                ServiceDiscovery<Object> d = disc(f[1]);
                ServiceInstance<Object> inst = d.queryForInstance(f[2], f[3]);
                return inst == null ? null : json(inst);
            }
            case "disc.provider.new": {
                need(f, 4);
                ServiceDiscovery<Object> d = disc(f[2]);
                ServiceProvider<Object> p = d.serviceProviderBuilder().serviceName(f[3]).build();
                p.start();
                put(f[1], p);
                return null;
            }
            case "disc.provider.get": {
                need(f, 2);
                ServiceInstance<Object> inst = provider(f[1]).getInstance();
                return inst == null ? null : json(inst);
            }
            case "disc.provider.all": {
                need(f, 2);
                return jsons(provider(f[1]).getAllInstances());
            }
            case "disc.cache.new": {
                need(f, 4);
                ServiceDiscovery<Object> d = disc(f[2]);
                ServiceCache<Object> c = d.serviceCacheBuilder().name(f[3]).build();
                String cid = f[1];
                c.addListener(new ServiceCacheListener() {
                    @Override
                    public void cacheChanged() {
                        List<String> ids = ids(c.getInstances());
                        emit.accept("event disccache " + cid + " " + (ids.isEmpty() ? "-" : String.join(",", ids)));
                    }

                    @Override
                    public void stateChanged(CuratorFramework cl, ConnectionState s) {
                    }
                });
                c.start();
                put(cid, c);
                return null;
            }
            case "disc.cache.ids": {
                need(f, 2);
                ServiceCache<Object> c = cache(f[1]);
                return String.join(" ", ids(c.getInstances()));
            }
            case "disc.close": {
                need(f, 2);
                Object o = objects.remove(f[1]);
                if (o == null) {
                    throw new IllegalArgumentException("no object " + f[1]);
                }
                ((java.io.Closeable) o).close();
                return null;
            }
            default:
                throw new IllegalArgumentException("unknown command " + f[0]);
        }
    }

    private static List<String> ids(Collection<ServiceInstance<Object>> in) {
        List<String> ids = new ArrayList<>();
        for (ServiceInstance<Object> i : in) {
            ids.add(i.getId());
        }
        ids.sort(null);
        return ids;
    }

    private static String jsons(Collection<ServiceInstance<Object>> in) throws Exception {
        List<ServiceInstance<Object>> list = new ArrayList<>(in);
        list.sort((a, b) -> a.getId().compareTo(b.getId()));
        List<String> out = new ArrayList<>();
        for (ServiceInstance<Object> i : list) {
            out.add(json(i));
        }
        return String.join(" ", out);
    }

    /** json writes the instance in full mode (with "enabled"), base64-encoded. */
    private static String json(ServiceInstance<Object> inst) throws Exception {
        byte[] b = new JsonInstanceSerializer<Object>(Object.class, false).serialize(inst);
        return Base64.getEncoder().encodeToString(b);
    }

    private static Class<?> payloadClass(String kind) {
        switch (kind) {
            case "details":
                return Details.class;
            case "map":
                return Map.class;
            default:
                throw new IllegalArgumentException("payload kind " + kind + ": want details or map");
        }
    }

    @SuppressWarnings("unchecked")
    private static <T> Class<T> cast(Class<?> c) {
        return (Class<T>) c;
    }

    private static void put(String id, Object o) {
        if (objects.putIfAbsent(id, o) != null) {
            throw new IllegalArgumentException("object " + id + " exists");
        }
    }

    @SuppressWarnings("unchecked")
    private static ServiceDiscovery<Object> disc(String id) {
        return (ServiceDiscovery<Object>) get(id, ServiceDiscovery.class);
    }

    @SuppressWarnings("unchecked")
    private static ServiceProvider<Object> provider(String id) {
        return (ServiceProvider<Object>) get(id, ServiceProvider.class);
    }

    @SuppressWarnings("unchecked")
    private static ServiceCache<Object> cache(String id) {
        return (ServiceCache<Object>) get(id, ServiceCache.class);
    }

    private static Object get(String id, Class<?> c) {
        Object o = objects.get(id);
        if (o == null || !c.isInstance(o)) {
            throw new IllegalArgumentException("no " + c.getSimpleName() + " " + id);
        }
        return o;
    }

    private static void need(String[] f, int n) {
        if (f.length < n) {
            throw new IllegalArgumentException(f[0] + ": want " + (n - 1) + " arguments, got " + (f.length - 1));
        }
    }
}
