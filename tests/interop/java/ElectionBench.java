// Election benchmarks of Apache Curator 5.4 (and of the plain ZooKeeper 3.8 Java client) against a
// ZooKeeper-protocol server (docs/BENCHMARKS.md). Started by scripts/bench-curator.py, which starts the
// server, compiles this file against Debian's jars and collects the JSON lines it prints.
//
//   java -cp build:JARS ElectionBench HOST:PORT latch N HANDOFFS [count] [gap=MS]
//   java -cp build:JARS ElectionBench HOST:PORT selector SECONDS
//   java -cp build:JARS ElectionBench HOST:PORT crash TRIALS SESSION_MS
//   java -cp build:JARS ElectionBench HOST:PORT herd N CHANGES
//   java -cp build:JARS ElectionBench HOST:PORT participant PATH SESSION_MS   (crash's child JVM)
//
// Every measurement prints ONE line of JSON on stdout (see BenchReport.java; progress goes to
// stderr). All participants of a measurement live in this one JVM, each with its own
// CuratorFramework (or ZooKeeper handle), i.e. its own TCP connection and session, except in
// `crash`, where the leader is a child JVM that is killed with SIGKILL (Process.destroyForcibly).
//
// Watch notifications are counted on the server: the deltas of ZooKeeper's `mntr` summaries
// zk_sum_node_{created,deleted,changed,children}_watch_count (watchers triggered = notifications
// sent, one per session and watch). The herd scheme also counts the events its watchers receive.

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class ElectionBench {
    static String connect;
    static final int SESSION_MS = 10_000;  // sessions of the non-crash measurements
    static final long WAIT_S = 60;         // bound on anything that should happen soon
    static final int WARMUP = 50;          // unrecorded latch handoffs first (JIT warm-up)
    static final int HERD_WARMUP = 3;      // unrecorded herd changes first

    // ---------------------------------------------------------------------------------------
    // helpers

    static void progress(String fmt, Object... args) {
        System.err.printf(Locale.ROOT, "[bench] " + fmt + "%n", args);
        System.err.flush();
    }

    static CuratorFramework newClient(int sessionMs) {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(30_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        c.start();
        return c;
    }

    static List<CuratorFramework> newClients(int n, int sessionMs) throws Exception {
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < n; i++) cs.add(newClient(sessionMs));
        for (CuratorFramework c : cs) {
            if (!c.blockUntilConnected((int) WAIT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("client did not connect");
            }
        }
        return cs;
    }

    static double ms(long nanos) {
        return nanos / 1e6;
    }

    /** Watch notifications the server has sent so far (sum of the four mntr summaries). */
    static long serverNotifications() throws Exception {
        String[] hp = connect.split(",")[0].split(":");
        try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            OutputStream o = s.getOutputStream();
            o.write("mntr".getBytes(StandardCharsets.US_ASCII));
            o.flush();
            BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(),
                    StandardCharsets.US_ASCII));
            long total = 0;
            boolean seen = false;
            for (String line; (line = r.readLine()) != null; ) {
                if (line.startsWith("zk_sum_node_") && line.contains("_watch_count")) {
                    total += Long.parseLong(line.split("\t")[1].trim());
                    seen = true;
                }
            }
            if (!seen) throw new IllegalStateException("server's mntr has no watch-count sums");
            return total;
        }
    }

    static void ensurePath(CuratorFramework c, String path) throws Exception {
        try {
            c.create().creatingParentContainersIfNeeded().forPath(path);
        } catch (KeeperException.NodeExistsException e) {
            // fine
        }
    }

    // ---------------------------------------------------------------------------------------
    // LeaderLatch: handoff latency (leader close() to the next isLeader()), with the old leader
    // rejoining at the tail; optionally the notifications per change; then the drain.

    static final class Member {
        final int id;
        final CuratorFramework client;
        volatile LeaderLatch latch;

        Member(int id, CuratorFramework client) {
            this.id = id;
            this.client = client;
        }
    }

    static LeaderLatch startLatch(Member m, String path, BlockingQueue<long[]> leaders)
            throws Exception {
        LeaderLatch l = new LeaderLatch(m.client, path, "p" + m.id);
        l.addListener(new LeaderLatchListener() {
            @Override public void isLeader() {
                leaders.add(new long[] {m.id, System.nanoTime()});
            }

            @Override public void notLeader() {
            }
        });
        l.start();
        m.latch = l;
        return l;
    }

    static long[] nextLeader(BlockingQueue<long[]> leaders) throws InterruptedException {
        long[] e = leaders.poll(WAIT_S, TimeUnit.SECONDS);
        if (e == null) throw new IllegalStateException("no new leader within " + WAIT_S + " s");
        return e;
    }

    static void latch(int n, int handoffs, boolean count, long gapMs) throws Exception {
        String path = "/bench/latch-" + n + "-" + System.nanoTime();
        long tc = System.nanoTime();
        List<CuratorFramework> cs = newClients(n, SESSION_MS);
        double connectMs = ms(System.nanoTime() - tc);
        ensurePath(cs.get(0), path);
        BlockingQueue<long[]> leaders = new LinkedBlockingQueue<>();
        List<Member> ms = new ArrayList<>();
        for (int i = 0; i < n; i++) ms.add(new Member(i, cs.get(i)));
        long t0 = System.nanoTime();
        for (Member m : ms) startLatch(m, path, leaders);
        while (cs.get(0).getChildren().forPath(path).size() < n) Thread.sleep(1);
        double startAllMs = ms(System.nanoTime() - t0);
        long[] cur = nextLeader(leaders);
        progress("latch N=%d: %d clients connected in %.0f ms, all nodes created %.0f ms after "
                + "start(); handoffs...", n, n, connectMs, startAllMs);

        List<Double> lat = new ArrayList<>();
        List<Long> notes = new ArrayList<>();
        int warm = Math.min(WARMUP, handoffs);  // JIT warm-up: not recorded
        for (int h = -warm; h < handoffs; h++) {
            Member leader = ms.get((int) cur[0]);
            long before = count ? serverNotifications() : 0;
            long ts = System.nanoTime();
            leader.latch.close();
            long[] next = nextLeader(leaders);
            if (h >= 0) lat.add(ms(next[1] - ts));
            if (next[0] == leader.id) throw new IllegalStateException("same leader again");
            cur = next;
            startLatch(leader, path, leaders);  // rejoin at the tail
            if (gapMs > 0) Thread.sleep(gapMs);  // let the rejoin settle: an idle-state handoff
            if (count) {
                while (cs.get(0).getChildren().forPath(path).size() < n) Thread.sleep(1);
                Thread.sleep(50);  // the rejoiner's getData-with-watch on its predecessor
                if (h >= 0) notes.add(serverNotifications() - before);
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measurement", count ? "predecessor_notifications" : "latch_handoff");
        out.put("recipe", "Curator 5.4 LeaderLatch");
        out.put("n", n);
        out.put("handoffs", handoffs);
        out.put("warmup_handoffs", warm);
        out.put("gap_ms", gapMs);
        BenchReport.putStats(out, "handoff_ms_", lat);
        if (count) {
            List<Double> nd = new ArrayList<>();
            for (long x : notes) nd.add((double) x);
            out.put("notifications_per_change_mean", BenchReport.mean(nd));
            out.put("notifications_per_change_max", Collections.max(nd));
            out.put("notifications_per_change_min", Collections.min(nd));
        }
        out.put("connect_all_ms", connectMs);
        out.put("start_all_to_all_nodes_ms", startAllMs);

        // Drain: each leader closes as soon as it is told it leads, until nobody is left.
        long td = System.nanoTime();
        for (int left = n; ; ) {
            Member leader = ms.get((int) cur[0]);
            leader.latch.close();
            if (--left == 0) break;
            cur = nextLeader(leaders);
        }
        out.put("drain_all_ms", ms(System.nanoTime() - td));
        BenchReport.emit(out);
        // No close() of the clients: main() exits and the server is stopped right after.
    }

    // ---------------------------------------------------------------------------------------
    // LeaderSelector: 3 participants, autoRequeue, empty takeLeadership.

    static void selector(double seconds) throws Exception {
        int n = 3;
        String path = "/bench/selector-" + System.nanoTime();
        List<CuratorFramework> cs = newClients(n, SESSION_MS);
        final AtomicLong count = new AtomicLong();
        final AtomicLong lastEnd = new AtomicLong(0);
        final List<Double> handoff = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger lastId = new AtomicInteger(-1);
        final AtomicInteger sameTwice = new AtomicInteger();
        final AtomicLong w0 = new AtomicLong(), w1 = new AtomicLong();  // the measured window
        List<LeaderSelector> sels = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int id = i;
            LeaderSelector s = new LeaderSelector(cs.get(i), path, new LeaderSelectorListenerAdapter() {
                @Override public void takeLeadership(CuratorFramework client) {
                    long now = System.nanoTime();
                    long prev = lastEnd.get();
                    long a = w0.get();
                    if (a != 0 && now >= a && w1.get() == 0) {
                        count.incrementAndGet();
                        if (prev != 0 && prev >= a) handoff.add(ms(now - prev));
                        if (lastId.get() == id) sameTwice.incrementAndGet();
                    }
                    lastId.set(id);
                    lastEnd.set(System.nanoTime());
                }
            });
            s.autoRequeue();
            sels.add(s);
        }
        for (LeaderSelector s : sels) s.start();
        Thread.sleep(2000);  // warm-up
        w0.set(System.nanoTime());
        Thread.sleep((long) (seconds * 1000));
        w1.set(System.nanoTime());
        long[] window = {w0.get(), w1.get()};
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measurement", "selector_rate");
        out.put("recipe", "Curator 5.4 LeaderSelector, autoRequeue, empty takeLeadership");
        out.put("n", n);
        out.put("seconds", ms(window[1] - window[0]) / 1000.0);
        out.put("leaderships", count.get());
        out.put("leaderships_per_s", count.get() / (ms(window[1] - window[0]) / 1000.0));
        BenchReport.putStats(out, "handoff_ms_", new ArrayList<>(handoff));
        out.put("same_leader_twice_in_a_row", sameTwice.get());
        BenchReport.emit(out);
        for (LeaderSelector s : sels) s.close();
        for (CuratorFramework c : cs) c.close();
    }

    // ---------------------------------------------------------------------------------------
    // Crash failover: the leader is a child JVM; SIGKILL it; time to the survivor's isLeader().

    static void participant(String path, int sessionMs) throws Exception {
        CuratorFramework c = newClient(sessionMs);
        if (!c.blockUntilConnected((int) WAIT_S, TimeUnit.SECONDS)) throw new IllegalStateException();
        ensurePath(c, path);
        LeaderLatch l = new LeaderLatch(c, path, "child");
        l.addListener(new LeaderLatchListener() {
            @Override public void isLeader() {
                try {
                    System.out.println("LEADER session_timeout_ms="
                            + c.getZookeeperClient().getZooKeeper().getSessionTimeout());
                } catch (Exception e) {
                    System.out.println("LEADER session_timeout_ms=-1");
                }
                System.out.flush();
            }

            @Override public void notLeader() {
            }
        });
        l.start();
        Thread.sleep(Long.MAX_VALUE);
    }

    static void crash(int trials, int sessionMs) throws Exception {
        String cp = System.getProperty("java.class.path");
        Random rnd = new Random(6);
        List<Double> ratios = new ArrayList<>();
        List<Double> failMs = new ArrayList<>();
        int granted = -1;
        for (int t = 0; t < trials; t++) {
            String path = "/bench/crash-" + System.nanoTime();
            ProcessBuilder pb = new ProcessBuilder("java", "-Xmx128m",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", cp,
                    "ElectionBench", connect, "participant", path, String.valueOf(sessionMs));
            pb.redirectError(ProcessBuilder.Redirect.DISCARD);
            Process child = pb.start();
            BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8));
            String line = r.readLine();
            if (line == null || !line.startsWith("LEADER")) {
                child.destroyForcibly();
                throw new IllegalStateException("child participant did not lead: " + line);
            }
            granted = Integer.parseInt(line.split("=")[1]);
            CuratorFramework c = newClient(sessionMs);
            if (!c.blockUntilConnected((int) WAIT_S, TimeUnit.SECONDS)) throw new IllegalStateException();
            CountDownLatch leads = new CountDownLatch(1);
            long[] at = new long[1];
            LeaderLatch l = new LeaderLatch(c, path, "survivor");
            l.addListener(new LeaderLatchListener() {
                @Override public void isLeader() {
                    at[0] = System.nanoTime();
                    leads.countDown();
                }

                @Override public void notLeader() {
                }
            });
            l.start();
            while (c.getChildren().forPath(path).size() < 2) Thread.sleep(1);
            // A random phase against the client's pings and the server's expiry ticks.
            Thread.sleep(500 + rnd.nextInt(sessionMs));
            if (l.hasLeadership()) throw new IllegalStateException("survivor leads before the crash");
            long tk = System.nanoTime();
            child.destroyForcibly();  // SIGKILL
            if (!leads.await(3L * sessionMs + 10_000, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("survivor never became leader");
            }
            child.waitFor();
            double f = ms(at[0] - tk);
            failMs.add(f);
            ratios.add(f / sessionMs);
            progress("crash trial %d: %.0f ms = %.3f x the %d ms session timeout", t, f,
                    f / sessionMs, sessionMs);
            l.close();
            c.close();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measurement", "crash_failover");
        out.put("recipe", "Curator 5.4 LeaderLatch, leader JVM SIGKILLed");
        out.put("trials", trials);
        out.put("session_timeout_ms", sessionMs);
        out.put("granted_session_timeout_ms", granted);
        BenchReport.putStats(out, "ratio_", ratios);
        BenchReport.putStats(out, "failover_ms_", failMs);
        out.put("ratios", ratios);
        BenchReport.emit(out);
    }

    // ---------------------------------------------------------------------------------------
    // Herd: every participant watches the parent's children (plain ZooKeeper API, one session
    // each). The leader deletes its node (everyone's children watch fires, its own included),
    // the successor notices it is the lowest; the old leader then rejoins at the tail.

    static final class HerdMember implements Watcher {
        final int id;
        final String parent;
        final AtomicLong events;
        final AtomicInteger pending;
        final BlockingQueue<long[]> leaders;
        ZooKeeper zk;
        volatile String node;      // our node's name, null when out of the election
        volatile boolean leader;

        HerdMember(int id, String parent, AtomicLong events, AtomicInteger pending,
                   BlockingQueue<long[]> leaders) {
            this.id = id;
            this.parent = parent;
            this.events = events;
            this.pending = pending;
            this.leaders = leaders;
        }

        @Override public void process(WatchedEvent e) {
            if (e.getType() == Event.EventType.None) return;
            events.incrementAndGet();
            if (node != null) look(); // re-arm; out of the election: do not
        }

        void look() {
            pending.incrementAndGet();
            zk.getChildren(parent, this, (rc, path, ctx, children) -> {
                try {
                    if (rc != 0 || node == null) return;
                    String min = Collections.min(children);
                    if (min.equals(node) && !leader) {
                        leader = true;
                        leaders.add(new long[] {id, System.nanoTime()});
                    }
                } finally {
                    pending.decrementAndGet();
                }
            }, null);
        }

        void create() throws Exception {
            String p = zk.create(parent + "/n-", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE,
                    CreateMode.EPHEMERAL_SEQUENTIAL);
            leader = false;
            node = p.substring(parent.length() + 1);
        }

        void join() throws Exception {
            create();
            look();
        }

        void leave() throws Exception {
            String n = node;
            node = null;
            leader = false;
            zk.delete(parent + "/" + n, -1);
        }
    }

    static void quiesce(AtomicLong events, AtomicInteger pending, long serverBefore,
                        long clientBefore) throws Exception {
        long want = serverNotifications() - serverBefore;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
        while (events.get() - clientBefore < want || pending.get() > 0) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("herd never settled");
            Thread.sleep(1);
        }
    }

    static void herd(int n, int changes) throws Exception {
        String parent = "/bench/herd-" + n + "-" + System.nanoTime();
        AtomicLong events = new AtomicLong();
        AtomicInteger pending = new AtomicInteger();
        BlockingQueue<long[]> leaders = new LinkedBlockingQueue<>();
        List<HerdMember> ms = new ArrayList<>();
        CountDownLatch connected = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            HerdMember m = new HerdMember(i, parent, events, pending, leaders);
            m.zk = new ZooKeeper(connect, SESSION_MS, e -> {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) connected.countDown();
            });
            ms.add(m);
        }
        if (!connected.await(WAIT_S, TimeUnit.SECONDS)) throw new IllegalStateException("connect");
        try {
            ms.get(0).zk.create("/bench", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            // fine
        }
        ms.get(0).zk.create(parent, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        // Everyone creates first, then everyone watches: joining one by one with watches
        // armed would itself be the herd, N^2/2 notifications before the first measurement.
        for (HerdMember m : ms) m.create();
        for (HerdMember m : ms) m.look();
        long[] cur = nextLeader(leaders);
        quiesce(events, pending, serverNotifications(), events.get());
        progress("herd N=%d: joined; changes...", n);
        List<Double> lat = new ArrayList<>();
        List<Double> onDelete = new ArrayList<>();
        List<Double> onRejoin = new ArrayList<>();
        List<Double> clientSeen = new ArrayList<>();
        for (int c = -HERD_WARMUP; c < changes; c++) {
            if (c == 0) {
                lat.clear();
                onDelete.clear();
                onRejoin.clear();
                clientSeen.clear();
            }
            HerdMember leader = ms.get((int) cur[0]);
            long s0 = serverNotifications();
            long c0 = events.get();
            long ts = System.nanoTime();
            leader.leave();
            long[] next = nextLeader(leaders);
            lat.add(ms(next[1] - ts));
            cur = next;
            quiesce(events, pending, s0, c0);
            long s1 = serverNotifications();
            long c1 = events.get();
            leader.join();
            quiesce(events, pending, s1, c1);
            long s2 = serverNotifications();
            onDelete.add((double) (s1 - s0));
            onRejoin.add((double) (s2 - s1));
            clientSeen.add((double) (events.get() - c0));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("measurement", "herd_notifications");
        out.put("recipe", "plain ZooKeeper API, every participant watches the parent's children");
        out.put("n", n);
        out.put("changes", changes);
        BenchReport.putStats(out, "handoff_ms_", lat);
        out.put("notifications_on_delete_mean", BenchReport.mean(onDelete));
        out.put("notifications_on_rejoin_mean", BenchReport.mean(onRejoin));
        out.put("notifications_per_change_mean",
                BenchReport.mean(onDelete) + BenchReport.mean(onRejoin));
        out.put("client_events_per_change_mean", BenchReport.mean(clientSeen));
        BenchReport.emit(out);
    }

    // ---------------------------------------------------------------------------------------

    public static void main(String[] a) throws Exception {
        connect = a[0];
        switch (a[1]) {
            case "latch": {
                boolean count = false;
                long gap = 0;
                for (int i = 4; i < a.length; i++) {
                    if (a[i].equals("count")) count = true;
                    else if (a[i].startsWith("gap=")) gap = Long.parseLong(a[i].substring(4));
                }
                latch(Integer.parseInt(a[2]), Integer.parseInt(a[3]), count, gap);
                break;
            }
            case "selector":
                selector(Double.parseDouble(a[2]));
                break;
            case "crash":
                crash(Integer.parseInt(a[2]), Integer.parseInt(a[3]));
                break;
            case "herd":
                herd(Integer.parseInt(a[2]), Integer.parseInt(a[3]));
                break;
            case "participant":
                participant(a[2], Integer.parseInt(a[3]));
                break;
            default:
                throw new IllegalArgumentException("unknown measurement " + a[1]);
        }
        System.exit(0);
    }
}
