// Service discovery benchmark of Apache Curator 5.4's curator-x-discovery against a
// ZooKeeper-protocol server (docs/BENCHMARKS.md): the counterpart of
// `rzk bench --workload discovery-expiry`. Started by scripts/bench-curator.py.
//
//   java -cp build:JARS DiscoveryBench HOST:PORT discovery N TRIALS SESSION_MS [RZK]
//   java -cp build:JARS DiscoveryBench HOST:PORT instance BASE ID SESSION_MS   (the child JVM)
//
// N ServiceCaches of one service, each on its own CuratorFramework (its own session, as each
// of N application processes would have). Per trial a child JVM registers an instance and
// prints "REGISTERED"; once every cache lists it, after a random phase against the pings and
// the server's expiry ticks, the child is killed with SIGKILL (its socket closed, its session
// left to expire). The sample: the kill to the moment the last cache no longer lists the
// instance, each cache checked from its own cacheChanged() listener.
//
// With RZK (an rzk binary), the instance is `RZK register` instead of a child JVM: the victim
// that `rzk bench --workload discovery-expiry` cuts off is a session of the same client
// library, so both sides' sessions expire alike (the server expires a session a timeout after
// the last packet it heard, and clients ping at different intervals) and only the caches
// differ.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.details.ServiceCacheListener;

public class DiscoveryBench {
    static final String SERVICE = "bench";

    static ServiceDiscovery<Void> discovery(CuratorFramework c, String base) throws Exception {
        ServiceDiscovery<Void> d = ServiceDiscoveryBuilder.builder(Void.class).client(c)
                .basePath(base).build();
        d.start();
        return d;
    }

    static boolean lists(ServiceCache<Void> cache, String id) {
        for (ServiceInstance<Void> i : cache.getInstances()) {
            if (i.getId().equals(id)) return true;
        }
        return false;
    }

    /** Counts down `done` once `cache` lists `id` (gone false) or no longer does (gone true). */
    static ServiceCacheListener waiter(ServiceCache<Void> cache, String id, boolean gone,
                                       CountDownLatch done, long[] at, int k) {
        ServiceCacheListener l = new ServiceCacheListener() {
            boolean fired;

            @Override public synchronized void cacheChanged() {
                if (!fired && lists(cache, id) != gone) {
                    fired = true;
                    at[k] = System.nanoTime();
                    done.countDown();
                }
            }

            @Override public void stateChanged(CuratorFramework c, ConnectionState s) {
            }
        };
        cache.addListener(l);
        l.cacheChanged();  // it may hold already
        return l;
    }

    /** The instance's process: a child JVM, or `rzk register` when `rzk` is set. */
    static Process victim(String rzk, String base, String id, int sessionMs) throws Exception {
        ProcessBuilder pb = rzk == null
                ? new ProcessBuilder("java", "-Xmx128m",
                        "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp",
                        System.getProperty("java.class.path"), "DiscoveryBench",
                        ElectionBench.connect, "instance", base, id, String.valueOf(sessionMs))
                : new ProcessBuilder(rzk, "--connect", ElectionBench.connect, "register", SERVICE,
                        "--id", id, "--address", "10.0.0.1", "--port", "8080", "--base-path",
                        base, "--session-timeout-ms", String.valueOf(sessionMs));
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process child = pb.start();
        if (rzk != null) return child;  // the caches tell when it is registered
        BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8));
        String line = r.readLine();
        if (!"REGISTERED".equals(line)) {
            child.destroyForcibly();
            throw new IllegalStateException("the instance did not register: " + line);
        }
        return child;
    }

    static void bench(int n, int trials, int sessionMs, String rzk) throws Exception {
        String base = "/bench-discovery/" + System.nanoTime();
        List<CuratorFramework> clients = ElectionBench.newClients(n, sessionMs);
        List<ServiceCache<Void>> caches = new ArrayList<>();
        for (CuratorFramework c : clients) {
            ServiceCache<Void> cache = discovery(c, base).serviceCacheBuilder().name(SERVICE).build();
            cache.start();
            caches.add(cache);
        }
        Random rnd = new Random(6);
        List<Double> deathMs = new ArrayList<>();
        for (int t = 0; t < trials; t++) {
            String id = "victim-" + t;
            Process child = victim(rzk, base, id, sessionMs);
            long[] at = new long[n];
            CountDownLatch listed = new CountDownLatch(n);
            List<ServiceCacheListener> ls = new ArrayList<>();
            for (int k = 0; k < n; k++) ls.add(waiter(caches.get(k), id, false, listed, at, k));
            if (!listed.await(ElectionBench.WAIT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the caches did not list the instance");
            }
            for (int k = 0; k < n; k++) caches.get(k).removeListener(ls.get(k));
            CountDownLatch gone = new CountDownLatch(n);
            for (int k = 0; k < n; k++) waiter(caches.get(k), id, true, gone, at, k);
            // The same random phase as ElectionBench's crash and rzk bench's side.
            Thread.sleep(500 + rnd.nextInt(sessionMs));
            long tk = System.nanoTime();
            child.destroyForcibly();  // SIGKILL
            if (!gone.await(3L * sessionMs + 10_000, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("a cache still lists the dead instance");
            }
            child.waitFor();
            long last = tk;
            for (long a : at) last = Math.max(last, a);
            double f = ElectionBench.ms(last - tk);
            deathMs.add(f);
            ElectionBench.progress("discovery trial %d: last of %d caches after %.0f ms (session %d ms)",
                    t, n, f, sessionMs);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measurement", "discovery_expiry");
        out.put("recipe", "Curator 5.4 curator-x-discovery ServiceCache, instance "
                + (rzk == null ? "JVM" : "rzk register") + " SIGKILLed");
        out.put("caches", n);
        out.put("trials", trials);
        out.put("session_timeout_ms", sessionMs);
        BenchReport.putStats(out, "death_to_last_cache_ms_", deathMs);
        out.put("death_to_last_cache_ms", deathMs);
        BenchReport.emit(out);
        for (ServiceCache<Void> c : caches) c.close();
        for (CuratorFramework c : clients) c.close();
    }

    static void instance(String base, String id, int sessionMs) throws Exception {
        CuratorFramework c = ElectionBench.newClients(1, sessionMs).get(0);
        ServiceInstance<Void> me = ServiceInstance.<Void>builder().name(SERVICE).id(id)
                .address("10.0.0.1").port(8080).build();
        discovery(c, base).registerService(me);
        System.out.println("REGISTERED");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    public static void main(String[] a) throws Exception {
        ElectionBench.connect = a[0];
        switch (a[1]) {
            case "discovery":
                bench(Integer.parseInt(a[2]), Integer.parseInt(a[3]), Integer.parseInt(a[4]),
                        a.length > 5 ? a[5] : null);
                break;
            case "instance":
                instance(a[2], a[3], Integer.parseInt(a[4]));
                break;
            default:
                throw new IllegalArgumentException("unknown measurement " + a[1]);
        }
        System.exit(0);
    }
}
