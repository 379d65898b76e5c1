// The Apache ZooKeeper 3.8 Java client against a server that enforces authentication
// (zoo.cfg `enforce.auth.enabled=true`, `enforce.auth.schemes=digest`).
// Usage: java -cp ... EnforcedAuthClient HOST:PORT none|digest
// Prints what the client observed, one `key: value` line each, for
// tests/interop/enforced_auth_suite.py to compare with what ZooKeeper 3.8 makes it observe.

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class EnforcedAuthClient {
    // How long the client is given to report the states that follow a refusal.
    private static final long SETTLE_MS = 3000;

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        boolean digest = args[1].equals("digest");
        List<String> states = new CopyOnWriteArrayList<>();
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = (WatchedEvent e) -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState().name());
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            }
        };
        ZooKeeper zk = new ZooKeeper(hosts, 10000, watcher);
        try {
            if (!connected.await(20, TimeUnit.SECONDS)) {
                System.out.println("connected: no");
                System.exit(1);
            }
            System.out.println("connected: yes");
            if (digest) {
                zk.addAuthInfo("digest", "user:secret".getBytes(StandardCharsets.UTF_8));
            }
            String outcome;
            try {
                zk.create("/enforced-java", "served".getBytes(StandardCharsets.UTF_8),
                          ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
                byte[] data = zk.getData("/enforced-java", false, null);
                outcome = "ok " + new String(data, StandardCharsets.UTF_8);
            } catch (KeeperException e) {
                outcome = "KeeperException " + e.code().name();
            }
            System.out.println("request: " + outcome);
            Thread.sleep(SETTLE_MS);
            System.out.println("states: " + String.join(",", states));
            System.out.println("alive: " + zk.getState().isAlive());
        } finally {
            zk.close();
        }
    }
}
