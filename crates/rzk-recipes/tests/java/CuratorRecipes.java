// One Apache Curator 5.4 recipe operation per run, for the Rust interop tests
// (tests/t17_queue.rs, tests/t18_counter.rs, tests/t23_barriers.rs, tests/t62_distributed_queue.rs):
//
//   java -cp ... CuratorRecipes HOST:PORT PATH COMMAND [ARG]
//
//   queue-offer N TAG   SimpleDistributedQueue.offer of "TAG-0" .. "TAG-(N-1)", in order
//   queue-take N        N SimpleDistributedQueue.take(); prints "took <item as UTF-8>" each
//   dqueue-put SIZES TAG
//                       DistributedQueue (QueueBuilder, UTF-8 items, foreground puts): one node
//                       per comma-separated size, put() for 1, putMulti() otherwise, of the items
//                       "TAG-0", "TAG-1", ... in order
//   dqueue-consume LOCK DistributedQueue consumer until killed, under the lock path LOCK ("-":
//                       none); prints "event started", then "event took <item>" per item
//   long-add N          N DistributedAtomicLong.increment(), each retried until it succeeds
//   long-get            prints "long <value>" (DistributedAtomicLong.get().postValue())
//   count-get           prints "count <value> <version>" (SharedCount.getVersionedValue())
//   count-set VALUE     SharedCount.setCount(VALUE)
//   barrier-set         DistributedBarrier.setBarrier()
//   barrier-remove      DistributedBarrier.removeBarrier()
//   barrier-wait SIGNAL waitOnBarrier(200 ms) until it times out once (so the barrier was up
//                       while it waited), then creates the node SIGNAL and waits unbounded;
//                       prints "released"
//   double N            DistributedDoubleBarrier(N): enter(), prints "entered", leave(),
//                       prints "left"
//   discovery-register NAME ID
//                       curator-x-discovery (base path PATH): registers a STATIC instance (it
//                       outlives this process) with every field set and a Map payload
//   discovery-query NAME
//                       queryForInstances(NAME); prints "instance <fields as Java reads them>"
//                       for each (see describe)
//   cache               CuratorCache of PATH until killed (tests/t25_tree_cache.rs): prints
//                       "event +PATH DATA", "event ~PATH DATA", "event -PATH" and "event init"
//   service-cache NAME  curator-x-discovery ServiceCache of NAME (base path PATH) until killed
//                       (tests/t29_service_cache.rs): prints "event set [ID,ID,...]" (sorted)
//                       once started and on every cacheChanged()
//
// Prints "done" when the command has finished; exits 1 with the exception on stderr otherwise.

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.curator.x.discovery.details.ServiceCacheListener;

public class CuratorRecipes {
    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0], path = args[1], command = args[2];
        String arg = args.length > 3 ? args[3] : null;
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(4000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        client.start();
        client.blockUntilConnected();
        try {
            run(client, path, command, arg, args.length > 4 ? args[4] : null);
            say("done");
        } finally {
            client.close();
        }
    }

    static void run(CuratorFramework client, String path, String command, String arg, String tag)
            throws Exception {
        switch (command) {
            case "queue-offer": {
                SimpleDistributedQueue q = new SimpleDistributedQueue(client, path);
                for (int i = 0; i < Integer.parseInt(arg); i++) {
                    q.offer((tag + "-" + i).getBytes(StandardCharsets.UTF_8));
                }
                break;
            }
            case "queue-take": {
                SimpleDistributedQueue q = new SimpleDistributedQueue(client, path);
                for (int i = 0; i < Integer.parseInt(arg); i++) {
                    say("took " + new String(q.take(), StandardCharsets.UTF_8));
                }
                break;
            }
            case "dqueue-put": {
                DistributedQueue<String> q = QueueBuilder.builder(client, null, UTF8, path)
                        .putInBackground(false).buildQueue();
                q.start();
                int next = 0;
                for (String size : arg.split(",")) {
                    int n = Integer.parseInt(size), first = next;
                    next += n;
                    if (n == 1) {
                        q.put(tag + "-" + first);
                    } else {
                        int[] i = {first};
                        int end = next;
                        q.putMulti(new MultiItem<String>() {
                            @Override
                            public String nextItem() {
                                return i[0] < end ? tag + "-" + i[0]++ : null;
                            }
                        });
                    }
                }
                q.close();
                break;
            }
            case "dqueue-consume": {
                QueueConsumer<String> consumer = new QueueConsumer<String>() {
                    @Override
                    public void consumeMessage(String item) {
                        say("event took " + item);
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, org.apache.curator.framework.state.ConnectionState s) {
                    }
                };
                QueueBuilder<String> b = QueueBuilder.builder(client, consumer, UTF8, path);
                DistributedQueue<String> q = (arg.equals("-") ? b : b.lockPath(arg)).buildQueue();
                q.start();
                say("event started");
                Thread.sleep(Long.MAX_VALUE);
                break;
            }
            case "long-add": {
                DistributedAtomicLong n = new DistributedAtomicLong(client, path, new RetryNTimes(1000, 1));
                for (int i = 0; i < Integer.parseInt(arg); i++) {
                    AtomicValue<Long> v = n.increment();
                    while (!v.succeeded()) {
                        v = n.increment();
                    }
                }
                break;
            }
            case "long-get": {
                DistributedAtomicLong n = new DistributedAtomicLong(client, path, new RetryNTimes(10, 10));
                say("long " + n.get().postValue());
                break;
            }
            case "count-get":
            case "count-set": {
                SharedCount c = new SharedCount(client, path, 0);
                c.start();
                try {
                    if (command.equals("count-set")) {
                        c.setCount(Integer.parseInt(arg));
                    } else {
                        VersionedValue<Integer> v = c.getVersionedValue();
                        say("count " + v.getValue() + " " + v.getVersion());
                    }
                } finally {
                    c.close();
                }
                break;
            }
            case "barrier-set":
                new DistributedBarrier(client, path).setBarrier();
                break;
            case "barrier-remove":
                new DistributedBarrier(client, path).removeBarrier();
                break;
            case "barrier-wait": {
                DistributedBarrier b = new DistributedBarrier(client, path);
                while (b.waitOnBarrier(200, TimeUnit.MILLISECONDS)) {
                    Thread.sleep(50);
                }
                client.create().creatingParentsIfNeeded().forPath(arg);
                b.waitOnBarrier();
                say("released");
                break;
            }
            case "double": {
                DistributedDoubleBarrier b = new DistributedDoubleBarrier(client, path, Integer.parseInt(arg));
                b.enter();
                say("entered");
                b.leave();
                say("left");
                break;
            }
            case "discovery-register": {
                Map<String, Object> payload = new TreeMap<>();
                payload.put("zone", "eu-1");
                payload.put("weight", 3);
                ServiceInstance<Map> instance = ServiceInstance.<Map>builder()
                        .name(arg).id(tag).address("10.1.2.3").port(8080).sslPort(8443)
                        .payload(payload).registrationTimeUTC(1700000000123L)
                        .serviceType(ServiceType.STATIC)
                        .uriSpec(new UriSpec("{scheme}://{address}:{port}/v1")).build();
                // Not closed: closing would unregister; the STATIC node outlives us.
                discovery(client, path).registerService(instance);
                break;
            }
            case "discovery-query": {
                ServiceDiscovery<Map> d = discovery(client, path);
                for (ServiceInstance<Map> i : d.queryForInstances(arg)) {
                    say("instance " + describe(i));
                }
                d.close();
                break;
            }
            case "cache": {
                CuratorCache cache = CuratorCache.build(client, path);
                cache.listenable().addListener(new CuratorCacheListener() {
                    @Override
                    public void event(Type type, ChildData old, ChildData data) {
                        switch (type) {
                            case NODE_CREATED:
                                say("event +" + data.getPath() + " " + text(data));
                                break;
                            case NODE_CHANGED:
                                say("event ~" + data.getPath() + " " + text(data));
                                break;
                            case NODE_DELETED:
                                say("event -" + old.getPath());
                                break;
                        }
                    }

                    @Override
                    public void initialized() {
                        say("event init");
                    }
                });
                cache.start();
                Thread.sleep(Long.MAX_VALUE);
                break;
            }
            case "service-cache": {
                ServiceCache<Map> cache = discovery(client, path).serviceCacheBuilder().name(arg).build();
                cache.addListener(new ServiceCacheListener() {
                    @Override
                    public void cacheChanged() {
                        say("event set [" + ids(cache) + "]");
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, org.apache.curator.framework.state.ConnectionState s) {
                    }
                });
                cache.start();
                say("event set [" + ids(cache) + "]");
                Thread.sleep(Long.MAX_VALUE);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }

    /** A DistributedQueue's items as UTF-8 strings. */
    static final QueueSerializer<String> UTF8 = new QueueSerializer<String>() {
        @Override
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    @SuppressWarnings("unchecked")
    static ServiceDiscovery<Map> discovery(CuratorFramework client, String basePath) throws Exception {
        ServiceDiscovery<Map> d = ServiceDiscoveryBuilder.builder(Map.class).client(client)
                .basePath(basePath).serializer(new JsonInstanceSerializer<>(Map.class)).build();
        d.start();
        return d;
    }

    /** The ids of a service cache's instances, sorted, joined by commas. */
    static synchronized String ids(ServiceCache<Map> cache) {
        java.util.List<String> ids = new java.util.ArrayList<>();
        for (ServiceInstance<Map> i : cache.getInstances()) {
            ids.add(i.getId());
        }
        java.util.Collections.sort(ids);
        return String.join(",", ids);
    }

    /** Every field as Java read it, space-separated, the payload as a sorted map. */
    static String describe(ServiceInstance<Map> i) {
        String payload = i.getPayload() == null ? "null" : new TreeMap<Object, Object>(i.getPayload()).toString();
        String uri = i.getUriSpec() == null ? "null" : i.buildUriSpec(Map.<String, Object>of("scheme", "https"));
        return "name=" + i.getName() + " id=" + i.getId() + " address=" + i.getAddress()
                + " port=" + i.getPort() + " sslPort=" + i.getSslPort() + " payload=" + payload
                + " time=" + i.getRegistrationTimeUTC() + " type=" + i.getServiceType()
                + " uri=" + uri + " enabled=" + i.isEnabled();
    }

    static String text(ChildData data) {
        return data.getData() == null ? "" : new String(data.getData(), StandardCharsets.UTF_8);
    }
}
