// Config propagation benchmark of Apache Curator 5.4 against a ZooKeeper-protocol server
// (docs/BENCHMARKS.md): the counterpart of `rzk bench --workload config-propagation`.
// Started by scripts/bench-curator.py, which starts the server, compiles this file against
// Debian's jars and collects the JSON line it prints.
//
//   java -cp build:JARS ConfigBench HOST:PORT config CACHES SESSIONS SECONDS GAP_MS
//
// CACHES CuratorCaches (SINGLE_NODE_CACHE: seed 002's configuration node) of one node, spread
// over SESSIONS CuratorFrameworks (one cache each when equal), and a writer with a
// CuratorFramework of its own that sets the node's data, one write at a time: the next write
// waits until every cache has seen the last one, then GAP_MS. Writes during LockBench's
// warm-up are not measured; then for SECONDS, per write, the latency from the setData call to
// each cache's listener seeing the new version (ms_*) and to the last one (last_ms_*).

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;

public class ConfigBench {
    static final long ROUND_WAIT_S = 60;  // bound on one write's updates

    /** One write: its version, its send time and when each cache saw it. */
    static final class Round {
        final int version;
        final long sent;
        final long[] seen;
        final AtomicInteger count = new AtomicInteger();
        final CountDownLatch done;

        Round(int version, int caches) {
            this.version = version;
            this.seen = new long[caches];
            this.done = new CountDownLatch(caches);
            this.sent = System.nanoTime();
        }

        void saw(long at) {
            int i = count.getAndIncrement();
            if (i < seen.length) {
                seen[i] = at;
                done.countDown();
            }
        }
    }

    static volatile Round current;

    static void changed(ChildData node) {
        long at = System.nanoTime();
        Round r = current;
        if (r != null && node != null && node.getStat().getVersion() == r.version) r.saw(at);
    }

    static void config(int caches, int sessions, double seconds, long gapMs) throws Exception {
        String path = "/bench-config/c-" + System.nanoTime();
        CuratorFramework writer = LockBench.newClients(1).get(0);
        writer.create().creatingParentsIfNeeded().forPath(path, "0".getBytes(StandardCharsets.UTF_8));
        List<CuratorFramework> cs = LockBench.newClients(sessions);
        CountDownLatch initialized = new CountDownLatch(caches);
        List<CuratorCache> held = new ArrayList<>();
        for (int i = 0; i < caches; i++) {
            CuratorCache cache = CuratorCache.build(cs.get(i % sessions), path,
                    CuratorCache.Options.SINGLE_NODE_CACHE);
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forChanges((old, node) -> changed(node))
                    .forInitialized(initialized::countDown)
                    .build());
            cache.start();
            held.add(cache);
        }
        if (!initialized.await(LockBench.WAIT_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("caches did not initialize");
        }
        LockBench.progress("config: %d caches on %d sessions initialized", caches, sessions);
        List<Double> updates = new ArrayList<>();
        List<Double> lasts = new ArrayList<>();
        long start = System.nanoTime();
        long measuredFrom = start + TimeUnit.MILLISECONDS.toNanos(LockBench.WARMUP_MS);
        long until = measuredFrom + (long) (seconds * 1e9);
        for (int version = 1; System.nanoTime() < until; version++) {
            Round r = new Round(version, caches);
            current = r;
            writer.setData().forPath(path, Integer.toString(version).getBytes(StandardCharsets.UTF_8));
            if (!r.done.await(ROUND_WAIT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("caches stopped updating at version " + version);
            }
            if (r.sent >= measuredFrom) {
                long last = 0;
                for (long at : r.seen) {
                    updates.add((at - r.sent) / 1e6);
                    last = Math.max(last, at - r.sent);
                }
                lasts.add(last / 1e6);
            }
            Thread.sleep(gapMs);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measurement", "config_propagation");
        out.put("recipe", "Curator 5.4 CuratorCache (SINGLE_NODE_CACHE)");
        out.put("n", caches);
        out.put("sessions", sessions);
        out.put("gap_ms", gapMs);
        out.put("seconds", seconds);
        out.put("rounds", lasts.size());
        BenchReport.putStats(out, "ms_", updates);
        BenchReport.putStats(out, "last_ms_", lasts);
        out.put("errors", LockBench.errors.get());
        BenchReport.emit(out);
    }

    public static void main(String[] a) throws Exception {
        LockBench.connect = a[0];
        if (!a[1].equals("config")) {
            throw new IllegalArgumentException("unknown measurement " + a[1]);
        }
        config(Integer.parseInt(a[2]), Integer.parseInt(a[3]), Double.parseDouble(a[4]),
                Long.parseLong(a[5]));
        // The caches end with the JVM; the server is stopped right after.
        System.exit(0);
    }
}
