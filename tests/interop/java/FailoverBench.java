// Session failover of Apache ZooKeeper's Java client 3.8 (the client Curator wraps) on an
// ensemble (docs/BENCHMARKS.md, Failover): the counterpart of `rzk bench --workload
// session-failover`. Started by scripts/bench-failover.py.
//
//   java -cp build:JARS FailoverBench HOSTS SESSIONS SESSION_MS PID
//
// SESSIONS sessions on HOSTS (the whole ensemble's connect string, so the client shuffles it
// as it does for any user), each with a watcher of its connection states. Once all are
// connected and have served for 2 s, the member whose process is PID is killed with SIGKILL. A session that sees
// Disconnected within 1 s of the kill was on that member; its sample is the kill to the
// answer of its first exists("/") after it is SyncConnected again: the time it was not
// served. The JSON line: p50/p99/max in milliseconds over those sessions, and how many.

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class FailoverBench {
    /** A session whose first Disconnected after the kill, and reconnection, are recorded. */
    static final class Probe implements Watcher {
        final CountDownLatch connected = new CountDownLatch(1);
        final CountDownLatch disconnected = new CountDownLatch(1);
        final CountDownLatch reconnected = new CountDownLatch(1);
        volatile boolean armed;
        volatile long disconnectedAt;
        ZooKeeper zk;

        @Override public void process(WatchedEvent e) {
            switch (e.getState()) {
                case SyncConnected:
                    connected.countDown();
                    if (disconnectedAt != 0) reconnected.countDown();
                    break;
                case Disconnected:
                    if (armed && disconnectedAt == 0) {
                        disconnectedAt = System.nanoTime();
                        disconnected.countDown();
                    }
                    break;
                default:
                    break;
            }
        }
    }

    public static void main(String[] a) throws Exception {
        String hosts = a[0];
        int sessions = Integer.parseInt(a[1]);
        int sessionMs = Integer.parseInt(a[2]);
        String pid = a[3];
        List<Probe> probes = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            Probe p = new Probe();
            p.zk = new ZooKeeper(hosts, sessionMs, p);
            probes.add(p);
        }
        for (Probe p : probes) {
            if (!p.connected.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("connect");
            p.zk.exists("/", false);
            p.armed = true;
        }
        Thread.sleep(2000);  // as long as `rzk bench` lets its sessions serve before the kill
        new ProcessBuilder("kill", "-KILL", pid).inheritIO().start().waitFor();
        long killed = System.nanoTime();
        double[] served = new double[probes.size()];
        List<Thread> waits = new ArrayList<>();
        for (int i = 0; i < probes.size(); i++) {
            final int k = i;
            final Probe p = probes.get(i);
            Thread t = new Thread(() -> {
                served[k] = -1;
                try {
                    if (!p.disconnected.await(1, TimeUnit.SECONDS)) return;  // not on it
                    while (true) {
                        p.reconnected.await(60, TimeUnit.SECONDS);
                        try {
                            p.zk.exists("/", false);
                            break;
                        } catch (org.apache.zookeeper.KeeperException.ConnectionLossException e) {
                            Thread.sleep(1);
                        }
                    }
                    served[k] = (System.nanoTime() - killed) / 1e6;
                } catch (Exception e) {
                    served[k] = Double.NaN;
                }
            });
            t.start();
            waits.add(t);
        }
        for (Thread t : waits) t.join();
        List<Double> ms = new ArrayList<>();
        for (double s : served) if (s != -1) ms.add(s);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("client", "java");
        out.put("sessions", sessions);
        out.put("moved", ms.size());
        BenchReport.putStats(out, "served_ms_", ms);
        System.out.println(BenchReport.json(out));
        for (Probe p : probes) p.zk.close();
    }
}
