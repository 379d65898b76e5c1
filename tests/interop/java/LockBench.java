// Lock benchmarks of Apache Curator 5.4 against a ZooKeeper-protocol server (docs/BENCHMARKS.md):
// the counterparts of `rzk bench --workload mutex-handoff | mutex-uncontended | semaphore`.
// Started by scripts/bench-curator.py, which starts the server, compiles this file against
// Debian's jars and collects the JSON line it prints.
//
//   java -cp build:JARS LockBench HOST:PORT mutex N SECONDS
//   java -cp build:JARS LockBench HOST:PORT uncontended SECONDS
//   java -cp build:JARS LockBench HOST:PORT semaphore N LEASES SECONDS
//
// Every contender has its own CuratorFramework (its own connection and session) and a thread
// that acquires, releases at once and acquires again. Measured for SECONDS after a warm-up
// (WARMUP_MS, once every mutex contender is queued), as rzk bench measures its side:
//   mutex        from a holder's release() call to the next holder's acquire() returning
//   uncontended  one contender: from acquire() to release() returning, pairs per second
//   semaphore    InterProcessSemaphoreV2 of LEASES: from acquire() to its lease, grants/s

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;

public class LockBench {
    static String connect;
    static final int SESSION_MS = 10_000;
    static final long WAIT_S = 600;       // bound on the joins
    static final long WARMUP_MS = 2_000;  // cycles not measured first (JIT warm-up)

    /** The measured window (0 until set) and what is measured in it. */
    static volatile long from, until;
    static final List<Double> samples = Collections.synchronizedList(new ArrayList<>());
    static final AtomicLong releasedAt = new AtomicLong();
    static final AtomicLong errors = new AtomicLong();

    static void progress(String fmt, Object... args) {
        System.err.printf(Locale.ROOT, "[lockbench] " + fmt + "%n", args);
        System.err.flush();
    }

    /** ElectionBench's clients, with this harness's connect string and session timeout. */
    static List<CuratorFramework> newClients(int n) throws Exception {
        ElectionBench.connect = connect;
        return ElectionBench.newClients(n, SESSION_MS);
    }

    static boolean over() {
        long u = until;
        return u != 0 && System.nanoTime() >= u;
    }

    static void record(long start, long at) {
        long f = from;
        if (f != 0 && at >= f && at < until) samples.add((at - start) / 1e6);
    }

    /** One acquire-release cycle; how each is measured depends on the measurement. */
    interface Cycle {
        void run() throws Exception;
    }

    static Thread contender(String name, Cycle cycle) {
        Thread t = new Thread(() -> {
            try {
                while (!over()) cycle.run();
            } catch (Exception e) {
                errors.incrementAndGet();
                progress("%s failed: %s", name, e);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** Waits until `n` nodes are under `path` (the contenders have queued), then warms up and
     *  measures for `seconds`. */
    static void measure(CuratorFramework c, String path, int n, double seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
        while (path != null) {
            try {
                if (c.getChildren().forPath(path).size() >= n) break;
            } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
                // not created yet
            }
            if (System.nanoTime() > deadline) throw new IllegalStateException("contenders did not queue");
            Thread.sleep(20);
        }
        Thread.sleep(WARMUP_MS);
        long f = System.nanoTime();
        until = f + (long) (seconds * 1e9);
        from = f;
        Thread.sleep((long) (seconds * 1000));
        Thread.sleep(5);  // past `until`
    }

    static void emit(String measurement, String recipe, int n, double seconds,
                     Map<String, Object> extra) {
        List<Double> xs;
        synchronized (samples) {
            xs = new ArrayList<>(samples);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measurement", measurement);
        out.put("recipe", recipe);
        out.put("n", n);
        out.putAll(extra);
        out.put("seconds", seconds);
        out.put("rounds", xs.size());
        out.put("per_s", xs.size() / seconds);
        BenchReport.putStats(out, "ms_", xs);
        out.put("errors", errors.get());
        BenchReport.emit(out);
    }

    static void mutex(int n, double seconds) throws Exception {
        String path = "/bench-lock/m-" + System.nanoTime();
        List<CuratorFramework> cs = newClients(n);
        for (int i = 0; i < n; i++) {
            InterProcessMutex m = new InterProcessMutex(cs.get(i), path);
            contender("mutex-" + i, () -> {
                m.acquire();
                long at = System.nanoTime();
                long r = releasedAt.getAndSet(0);
                if (r != 0) record(r, at);
                releasedAt.set(System.nanoTime());
                m.release();
            });
        }
        progress("mutex N=%d: contenders started", n);
        // All but the one releasing are queued.
        measure(cs.get(0), path, Math.max(1, n - 1), seconds);
        emit("mutex_handoff", "Curator 5.4 InterProcessMutex", n, seconds, Map.of());
    }

    static void uncontended(double seconds) throws Exception {
        String path = "/bench-lock/u-" + System.nanoTime();
        CuratorFramework c = newClients(1).get(0);
        InterProcessMutex m = new InterProcessMutex(c, path);
        contender("uncontended", () -> {
            long t = System.nanoTime();
            m.acquire();
            m.release();
            record(t, System.nanoTime());
        });
        measure(c, null, 0, seconds);
        emit("mutex_uncontended", "Curator 5.4 InterProcessMutex", 1, seconds, Map.of());
    }

    static void semaphore(int n, int leases, double seconds) throws Exception {
        String path = "/bench-lock/s-" + System.nanoTime();
        List<CuratorFramework> cs = newClients(n);
        for (int i = 0; i < n; i++) {
            InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(cs.get(i), path, leases);
            contender("semaphore-" + i, () -> {
                long t = System.nanoTime();
                Lease l = s.acquire();
                record(t, System.nanoTime());
                s.returnLease(l);
            });
        }
        measure(cs.get(0), null, 0, seconds);
        emit("semaphore", "Curator 5.4 InterProcessSemaphoreV2", n, seconds,
                Map.of("leases", leases));
    }

    public static void main(String[] a) throws Exception {
        connect = a[0];
        switch (a[1]) {
            case "mutex":
                mutex(Integer.parseInt(a[2]), Double.parseDouble(a[3]));
                break;
            case "uncontended":
                uncontended(Double.parseDouble(a[2]));
                break;
            case "semaphore":
                semaphore(Integer.parseInt(a[2]), Integer.parseInt(a[3]), Double.parseDouble(a[4]));
                break;
            default:
                throw new IllegalArgumentException("unknown measurement " + a[1]);
        }
        // Contenders still queued end with the JVM; the server is stopped right after.
        System.exit(0);
    }
}
