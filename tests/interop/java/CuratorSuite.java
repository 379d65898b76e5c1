// Interop checks with the real Apache Curator 5.4 client (Debian libcurator-*-java) against a
// ZooKeeper-protocol server. Usage: java -cp ... CuratorSuite HOST:PORT
// Prints one "ok"/"FAIL" line per test and a summary; exits 0 only if every test passed.
// Started by tests/interop/curator_suite.py, which also starts the server and compiles this file.

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.NodeCache;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

public class CuratorSuite {
    static final long WAIT_MS = 10_000;          // bound for anything that should happen soon
    static final int SESSION_MS = 6_000;
    static String connect;
    static final List<AutoCloseable> toClose = new ArrayList<>();

    interface Test { void run() throws Exception; }

    static final class Failure extends RuntimeException {
        Failure(String msg) { super(msg); }
    }

    static void check(boolean cond, String msg) {
        if (!cond) throw new Failure(msg);
    }

    static void checkEq(Object got, Object want, String what) {
        if (got == null ? want != null : !got.equals(want)) {
            throw new Failure(what + ": got " + got + ", want " + want);
        }
    }

    static void waitUntil(BooleanSupplier cond, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new Failure("timed out waiting for " + what);
            Thread.sleep(10);
        }
    }

    static <T> T poll(BlockingQueue<T> q, String what) throws InterruptedException {
        T v = q.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        if (v == null) throw new Failure("timed out waiting for " + what);
        return v;
    }

    static <T extends Throwable> void expectThrows(Class<T> cls, Test t, String what) {
        try {
            t.run();
        } catch (Throwable e) {
            if (cls.isInstance(e)) return;
            throw new Failure(what + ": threw " + e + ", want " + cls.getSimpleName());
        }
        throw new Failure(what + ": no exception, want " + cls.getSimpleName());
    }

    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }
    static String s(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }

    static CuratorFramework client() throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(SESSION_MS)
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        toClose.add(c);
        c.start();
        if (!c.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new Failure("client did not connect within " + WAIT_MS + "ms");
        }
        return c;
    }

    static <T extends AutoCloseable> T closeLater(T c) {
        toClose.add(c);
        return c;
    }

    static void closeAll() {
        // recipes first (added after their clients), then clients
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try { toClose.get(i).close(); } catch (Throwable ignored) { }
        }
        toClose.clear();
    }

    // ----------------------------------------------------------------------------------------

    static void basicOps() throws Exception {
        CuratorFramework c = client();
        check(c.getZookeeperClient().getZooKeeper().getSessionId() != 0, "session id");
        String p = c.create().creatingParentContainersIfNeeded().forPath("/cur/basic/a/b", b("hello"));
        checkEq(p, "/cur/basic/a/b", "create result");
        check(c.checkExists().forPath("/cur/basic/a") != null, "parent container created");
        Stat st = new Stat();
        checkEq(s(c.getData().storingStatIn(st).forPath(p)), "hello", "getData");
        checkEq(st.getVersion(), 0, "version");
        checkEq(st.getDataLength(), 5, "dataLength");
        Stat st2 = c.setData().withVersion(0).forPath(p, b("v2"));
        checkEq(st2.getVersion(), 1, "version after setData");
        check(st2.getMzxid() > st.getMzxid(), "mzxid grows");
        expectThrows(KeeperException.BadVersionException.class,
                () -> c.setData().withVersion(0).forPath(p, b("stale")), "setData with stale version");
        checkEq(s(c.getData().forPath(p)), "v2", "data after setData");
        expectThrows(KeeperException.NodeExistsException.class,
                () -> c.create().forPath(p), "create existing");
        expectThrows(KeeperException.NoNodeException.class,
                () -> c.getData().forPath("/cur/basic/none"), "getData missing");

        String e = c.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath("/cur/basic/a/e-");
        checkEq(e, "/cur/basic/a/e-0000000001", "ephemeral sequential name");
        checkEq(c.checkExists().forPath(e).getEphemeralOwner(),
                c.getZookeeperClient().getZooKeeper().getSessionId(), "ephemeralOwner");
        String prot = c.create().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                .forPath("/cur/basic/a/prot-");
        check(prot.matches("/cur/basic/a/_c_[0-9a-f-]{36}-prot-0000000002"),
                "protected name " + prot);
        String ttl = c.create().withTtl(5_000).withMode(CreateMode.PERSISTENT_WITH_TTL)
                .forPath("/cur/basic/ttl", b("t"));
        checkEq(ttl, "/cur/basic/ttl", "TTL node create");
        List<String> kids = new ArrayList<>(c.getChildren().forPath("/cur/basic/a"));
        Collections.sort(kids);
        checkEq(kids.size(), 3, "children of /cur/basic/a: " + kids);

        List<CuratorTransactionResult> res = c.transaction().forOperations(
                c.transactionOp().create().forPath("/cur/basic/tx", b("1")),
                c.transactionOp().setData().withVersion(1).forPath(p, b("v3")),
                c.transactionOp().check().withVersion(0).forPath("/cur/basic/tx"));
        checkEq(res.size(), 3, "transaction results");
        checkEq(res.get(0).getResultPath(), "/cur/basic/tx", "tx create path");
        checkEq(res.get(1).getResultStat().getVersion(), 2, "tx setData version");
        expectThrows(KeeperException.BadVersionException.class, () -> c.transaction().forOperations(
                c.transactionOp().delete().forPath("/cur/basic/tx"),
                c.transactionOp().check().withVersion(9).forPath(p)), "failing transaction");
        check(c.checkExists().forPath("/cur/basic/tx") != null, "failed transaction rolled back");

        expectThrows(KeeperException.BadVersionException.class,
                () -> c.delete().withVersion(0).forPath(p), "delete with stale version");
        c.delete().withVersion(2).forPath(p);
        check(c.checkExists().forPath(p) == null, "deleted");
        expectThrows(KeeperException.NoNodeException.class,
                () -> c.delete().forPath(p), "delete missing");
        c.delete().deletingChildrenIfNeeded().forPath("/cur/basic");
        check(c.checkExists().forPath("/cur/basic") == null, "recursive delete");
        // Curator's EnsembleTracker reads /zookeeper/config (getConfig) on connect
        checkEq(c.getConfig().forEnsemble().length, 0, "standalone getConfig data length");
    }

    static void curatorCache() throws Exception {
        CuratorFramework c = client();
        CuratorFramework w = client();
        c.create().creatingParentsIfNeeded().forPath("/cur/cache/x", b("0"));
        BlockingQueue<String> ev = new LinkedBlockingQueue<>();
        CuratorCache cache = closeLater(CuratorCache.build(w, "/cur/cache"));
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(d -> ev.add("create " + d.getPath() + " " + s(d.getData())))
                .forChanges((o, n) -> ev.add("change " + n.getPath() + " " + s(o.getData())
                        + "->" + s(n.getData())))
                .forDeletes(d -> ev.add("delete " + d.getPath()))
                .forInitialized(() -> ev.add("initialized"))
                .build());
        cache.start();
        // the initial load reports existing nodes as creates, then "initialized"
        List<String> initial = new ArrayList<>();
        for (int i = 0; i < 3; i++) initial.add(poll(ev, "initial cache events"));
        Collections.sort(initial);
        checkEq(initial, List.of("create /cur/cache ", "create /cur/cache/x 0", "initialized"),
                "initial cache events");
        c.setData().forPath("/cur/cache/x", b("1"));
        checkEq(poll(ev, "change"), "change /cur/cache/x 0->1", "cache event");
        c.create().forPath("/cur/cache/x/deep", b("d"));
        checkEq(poll(ev, "deep create"), "create /cur/cache/x/deep d", "cache event");
        c.delete().forPath("/cur/cache/x/deep");
        checkEq(poll(ev, "deep delete"), "delete /cur/cache/x/deep", "cache event");
        Optional<ChildData> x = cache.get("/cur/cache/x");
        check(x.isPresent() && s(x.get().getData()).equals("1"), "cache content " + x);

        // NodeCache: the older recipe, built on one-shot exists/getData watches
        @SuppressWarnings("deprecation")
        NodeCache nc = closeLater(new NodeCache(w, "/cur/cache/x"));
        BlockingQueue<String> nev = new LinkedBlockingQueue<>();
        nc.getListenable().addListener(() -> {
            ChildData d = nc.getCurrentData();
            nev.add(d == null ? "gone" : s(d.getData()));
        });
        nc.start(true);
        checkEq(s(nc.getCurrentData().getData()), "1", "NodeCache initial data");
        c.setData().forPath("/cur/cache/x", b("2"));
        checkEq(poll(nev, "NodeCache update"), "2", "NodeCache saw update");
        checkEq(poll(ev, "change 1->2"), "change /cur/cache/x 1->2", "cache event");
        c.delete().forPath("/cur/cache/x");
        checkEq(poll(nev, "NodeCache delete"), "gone", "NodeCache saw delete");
        checkEq(poll(ev, "delete x"), "delete /cur/cache/x", "cache event");
        Thread.sleep(300);
        check(ev.isEmpty(), "unexpected cache events " + ev);
    }

    static List<String> ids(java.util.Collection<Participant> ps) {
        List<String> out = new ArrayList<>();
        for (Participant p : ps) out.add(p.getId() + (p.isLeader() ? "*" : ""));
        return out;
    }

    static void leaderLatch() throws Exception {
        final int n = 5;
        CuratorFramework[] cs = new CuratorFramework[n];
        LeaderLatch[] ls = new LeaderLatch[n];
        boolean[] closed = new boolean[n];
        for (int i = 0; i < n; i++) {
            cs[i] = client();
            ls[i] = closeLater(new LeaderLatch(cs[i], "/cur/latch", "p" + i));
            ls[i].start();
            final int joined = i + 1;
            final LeaderLatch first = ls[0];
            // start one at a time so creation order (and thus succession) is p0, p1, ...
            waitUntil(() -> { try { return first.getParticipants().size() == joined; }
                              catch (Exception e) { return false; } }, "p" + i + " to join");
        }
        // p3 leaves early, while not leader: succession skips it
        // p2 loses its whole session instead of closing the latch
        int[] order = {0, 1, 2, 4};
        ls[3].close();
        closed[3] = true;
        for (int k = 0; k < order.length; k++) {
            final int want = order[k];
            check(ls[want].await(WAIT_MS, TimeUnit.MILLISECONDS), "p" + want + " await leadership");
            // exactly one open latch believes it leads, sampled for a while
            for (int sample = 0; sample < 20; sample++) {
                List<String> leaders = new ArrayList<>();
                for (int i = 0; i < n; i++) if (!closed[i] && ls[i].hasLeadership()) leaders.add("p" + i);
                checkEq(leaders, List.of("p" + want), "latches holding leadership");
                Thread.sleep(10);
            }
            List<String> expectParts = new ArrayList<>();
            for (int j = k; j < order.length; j++) {
                expectParts.add("p" + order[j] + (j == k ? "*" : ""));
            }
            // p3's close() deletes its node in the background: wait for that, not a fixed time
            final LeaderLatch leader = ls[want];
            waitUntil(() -> { try { return ids(leader.getParticipants()).equals(expectParts); }
                              catch (Exception e) { return false; } }, "p3's node to go");
            for (int i = 0; i < n; i++) {
                if (closed[i]) continue;
                checkEq(ls[i].getLeader().getId(), "p" + want, "getLeader() seen by p" + i);
                checkEq(ids(ls[i].getParticipants()), expectParts, "getParticipants() seen by p" + i);
            }
            if (want == 2) {
                cs[2].close();       // session closed: the ephemeral node goes, p4 takes over
            } else {
                ls[want].close();
            }
            closed[want] = true;
        }
        // LeaderLatch.close() deletes its node in the background
        waitUntil(() -> { try { return cs[0].getChildren().forPath("/cur/latch").isEmpty(); }
                          catch (Exception e) { return false; } }, "latch nodes to be deleted");
    }

    static void leaderSelector() throws Exception {
        final int n = 3;
        final int rounds = 9;
        AtomicInteger current = new AtomicInteger();
        AtomicInteger total = new AtomicInteger();
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        List<String> turns = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch enough = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);   // first leader waits until all have queued
        LeaderSelector[] sel = new LeaderSelector[n];
        for (int i = 0; i < n; i++) {
            final String id = "s" + i;
            final int me = i;
            CuratorFramework c = client();
            sel[i] = closeLater(new LeaderSelector(c, "/cur/selector", new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework client) throws Exception {
                    int now = current.incrementAndGet();
                    try {
                        if (now != 1) problems.add(id + " took leadership with " + (now - 1) + " other leader(s)");
                        if (!go.await(WAIT_MS, TimeUnit.MILLISECONDS)) problems.add("never released");
                        if (total.get() >= rounds) return;   // winding down
                        turns.add(id);
                        // another participant must agree on who leads right now
                        Participant l = sel[(me + 1) % n].getLeader();
                        if (!id.equals(l.getId()) || !l.isLeader()) {
                            problems.add("during " + id + "'s turn getLeader() said " + l);
                        }
                        if (!sel[me].hasLeadership()) problems.add(id + ": hasLeadership() false while leading");
                        Thread.sleep(50);
                        if (total.incrementAndGet() >= rounds) enough.countDown();
                    } finally {
                        current.decrementAndGet();
                    }
                }
            }));
            sel[i].setId(id);
            sel[i].autoRequeue();
        }
        // queue them one at a time, s0 first, so the rotation order is fixed
        for (int i = 0; i < n; i++) {
            sel[i].start();
            final int joined = i + 1;
            waitUntil(() -> { try { return sel[0].getParticipants().size() == joined; }
                              catch (Exception e) { return false; } }, "s" + i + " to queue");
        }
        checkEq(ids(sel[2].getParticipants()), List.of("s0*", "s1", "s2"), "selector participants");
        go.countDown();
        check(enough.await(20, TimeUnit.SECONDS), "only " + total.get() + " leadership turns in 20s: " + turns);
        for (LeaderSelector s : sel) s.close();
        check(problems.isEmpty(), "problems: " + problems);
        List<String> t = new ArrayList<>(turns).subList(0, rounds);
        for (int i = 0; i < rounds; i++) {
            checkEq(t.get(i), "s" + (i % n), "turn " + i + " of " + t + " (round-robin expected)");
        }
    }


    // A TCP forwarder we can cut, to make the plain ZooKeeper Java client lose its connection
    // (not its session) and reconnect. While blocked it accepts and immediately closes.
    static final class Proxy implements AutoCloseable {
        final ServerSocket listener;
        final String host;
        final int port;
        volatile boolean blocked;
        final List<Socket> live = Collections.synchronizedList(new ArrayList<>());

        Proxy(String target) throws IOException {
            int colon = target.lastIndexOf(':');
            host = target.substring(0, colon);
            port = Integer.parseInt(target.substring(colon + 1));
            listener = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
            Thread t = new Thread(this::acceptLoop, "proxy-accept");
            t.setDaemon(true);
            t.start();
        }

        String connectString() { return "127.0.0.1:" + listener.getLocalPort(); }

        void acceptLoop() {
            while (!listener.isClosed()) {
                try {
                    Socket in = listener.accept();
                    if (blocked) { in.close(); continue; }
                    Socket out = new Socket(host, port);
                    live.add(in);
                    live.add(out);
                    pump(in, out);
                    pump(out, in);
                } catch (IOException e) {
                    // listener closed, or the server refused: the client sees a dropped connection
                }
            }
        }

        void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[65536];
                try (InputStream i = from.getInputStream(); OutputStream o = to.getOutputStream()) {
                    int n;
                    while ((n = i.read(buf)) >= 0) { o.write(buf, 0, n); o.flush(); }
                } catch (IOException ignored) {
                } finally {
                    try { from.close(); } catch (IOException ignored) { }
                    try { to.close(); } catch (IOException ignored) { }
                }
            }, "proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        void cutAndBlock() {
            blocked = true;
            synchronized (live) {
                for (Socket s : live) { try { s.close(); } catch (IOException ignored) { } }
                live.clear();
            }
        }

        void unblock() { blocked = false; }

        @Override public void close() throws IOException { cutAndBlock(); listener.close(); }
    }

    static ZooKeeper plainClient(String hosts, BlockingQueue<String> states) throws Exception {
        ZooKeeper zk = new ZooKeeper(hosts, 10_000, ev -> {
            if (ev.getType() == Watcher.Event.EventType.None) states.add(ev.getState().toString());
        });
        toClose.add(zk::close);
        checkEq(poll(states, "SyncConnected"), "SyncConnected", "first connection state");
        return zk;
    }

    // Node events only: the Java client also hands connection-state changes (type None) to every
    // registered watcher.
    static Watcher into(BlockingQueue<String> q) {
        return (WatchedEvent ev) -> {
            if (ev.getType() != Watcher.Event.EventType.None) q.add(ev.getType() + " " + ev.getPath());
        };
    }

    // Plain ZooKeeper 3.8 Java client: after a connection loss it reconnects to the same session
    // and replays its auth (setAuth) and watches: SetWatches (opcode 101) when it only has
    // one-shot watches, SetWatches2 (105) when it also has persistent ones. One-shot watches
    // whose node changed while the client was away must fire right after the reconnect.
    static void reconnectReplaysWatchesAndAuth() throws Exception {
        CuratorFramework d = client();                     // direct, never disconnected
        List<ACL> bobOnly = List.of(new ACL(ZooDefs.Perms.ALL,
                new Id("digest", DigestAuthenticationProvider.generateDigest("bob:pw"))));
        d.create().creatingParentsIfNeeded().forPath("/cur/rc/data", b("0"));
        d.create().forPath("/cur/rc/kids");
        d.create().forPath("/cur/rc/tree");
        d.create().withACL(bobOnly).forPath("/cur/rc/secret", b("hidden"));

        Proxy proxy = closeLater(new Proxy(connect));
        BlockingQueue<String> statesA = new LinkedBlockingQueue<>();
        BlockingQueue<String> statesB = new LinkedBlockingQueue<>();
        ZooKeeper a = plainClient(proxy.connectString(), statesA);   // one-shot watches only
        ZooKeeper b2 = plainClient(proxy.connectString(), statesB);  // plus a persistent watch
        a.addAuthInfo("digest", b("bob:pw"));
        checkEq(s(a.getData("/cur/rc/secret", false, null)), "hidden", "bob reads the secret");
        a.create("/cur/rc/eph", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        long sidA = a.getSessionId(), sidB = b2.getSessionId();

        BlockingQueue<String> wa = new LinkedBlockingQueue<>();
        a.getData("/cur/rc/data", into(wa), null);
        a.getChildren("/cur/rc/kids", into(wa));
        check(a.exists("/cur/rc/none", into(wa)) == null, "exists on missing node");
        BlockingQueue<String> wb = new LinkedBlockingQueue<>();
        b2.addWatch("/cur/rc/tree", into(wb), AddWatchMode.PERSISTENT_RECURSIVE);
        BlockingQueue<String> wb1 = new LinkedBlockingQueue<>();
        b2.getData("/cur/rc/data", into(wb1), null);

        proxy.cutAndBlock();
        checkEq(poll(statesA, "A to notice the cut"), "Disconnected", "A state");
        checkEq(poll(statesB, "B to notice the cut"), "Disconnected", "B state");
        // changes while both are away
        d.setData().forPath("/cur/rc/data", b("1"));
        d.create().forPath("/cur/rc/kids/k");
        d.create().forPath("/cur/rc/none");
        d.create().forPath("/cur/rc/tree/missed");
        Thread.sleep(300);
        check(wa.isEmpty() && wb.isEmpty() && wb1.isEmpty(), "events while disconnected?");
        proxy.unblock();

        checkEq(poll(statesA, "A to reconnect"), "SyncConnected", "A state");
        checkEq(poll(statesB, "B to reconnect"), "SyncConnected", "B state");
        checkEq(a.getSessionId(), sidA, "A session id after reconnect");
        checkEq(b2.getSessionId(), sidB, "B session id after reconnect");
        check(a.exists("/cur/rc/eph", false) != null, "A's ephemeral survived the reconnect");

        // SetWatches catch-up: each watched node changed after the client's last zxid
        List<String> got = new ArrayList<>();
        for (int i = 0; i < 3; i++) got.add(poll(wa, "missed one-shot events for A"));
        Collections.sort(got);
        checkEq(got, List.of("NodeChildrenChanged /cur/rc/kids", "NodeCreated /cur/rc/none",
                "NodeDataChanged /cur/rc/data"), "events replayed to A after reconnect");
        checkEq(poll(wb1, "missed data event for B"), "NodeDataChanged /cur/rc/data",
                "one-shot watch replayed via SetWatches2");
        // persistent watches are re-added, without catch-up for what was missed
        d.create().forPath("/cur/rc/tree/after");
        checkEq(poll(wb, "persistent watch after reconnect"), "NodeCreated /cur/rc/tree/after",
                "first persistent-watch event after reconnect");
        // auth was replayed too
        checkEq(s(a.getData("/cur/rc/secret", false, null)), "hidden", "bob after reconnect");
        Thread.sleep(200);
        check(wa.isEmpty() && wb.isEmpty() && wb1.isEmpty(),
                "unexpected extra events " + wa + " " + wb + " " + wb1);
        a.delete("/cur/rc/secret", -1);   // deletingChildrenIfNeeded could not list it (no READ)
        d.delete().deletingChildrenIfNeeded().forPath("/cur/rc");
    }

    // ----------------------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: CuratorSuite HOST:PORT");
            System.exit(2);
        }
        connect = args[0];
        Thread dog = new Thread(() -> {
            try { Thread.sleep(90_000); } catch (InterruptedException e) { return; }
            System.out.println("CuratorSuite: WATCHDOG: still running after 90s, exiting");
            System.out.flush();
            Runtime.getRuntime().halt(3);
        });
        dog.setDaemon(true);
        dog.start();

        String[] names = {"basicOps", "curatorCache", "leaderLatch", "leaderSelector",
                          "reconnectReplays"};
        Test[] tests = {CuratorSuite::basicOps, CuratorSuite::curatorCache,
                        CuratorSuite::leaderLatch, CuratorSuite::leaderSelector,
                        CuratorSuite::reconnectReplaysWatchesAndAuth};
        List<String> failed = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < tests.length; i++) {
            long t1 = System.nanoTime();
            try {
                tests[i].run();
                System.out.printf("ok   %-20s %6.2fs%n", names[i], (System.nanoTime() - t1) / 1e9);
            } catch (Throwable e) {
                failed.add(names[i]);
                System.out.printf("FAIL %-20s %6.2fs  %s%n", names[i], (System.nanoTime() - t1) / 1e9,
                        e instanceof Failure ? e.getMessage() : e.toString());
                if (!(e instanceof Failure)) e.printStackTrace(System.out);
            } finally {
                closeAll();
            }
            System.out.flush();
        }
        System.out.printf("curator: %d tests, %d failed, %.1fs%s%n", tests.length, failed.size(),
                (System.nanoTime() - t0) / 1e9, failed.isEmpty() ? "" : ": " + String.join(", ", failed));
        System.out.flush();
        Runtime.getRuntime().halt(failed.isEmpty() ? 0 : 1);
    }
}
