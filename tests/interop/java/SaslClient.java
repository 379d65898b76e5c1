// The Apache ZooKeeper 3.8 Java client, or Curator 5.4 on it, logging in with SASL
// DIGEST-MD5 from a JAAS `Client` section (java.security.auth.login.config), as an operator
// configures a Kafka-style client.
// Usage: java -cp ... SaslClient HOST:PORT zookeeper|curator JAAS_FILE|none NODE
// Creates NODE with the creator-only ACL, reads it back, and prints what it observed, one
// `key: value` line each, for tests/interop/sasl_suite.py to compare with ZooKeeper 3.8.

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;

public class SaslClient {
    // How long the client is given to report the states that follow the first request.
    private static final long SETTLE_MS = 1500;

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        boolean curator = args[1].equals("curator");
        if (!args[2].equals("none")) {
            System.setProperty("java.security.auth.login.config", args[2]);
        }
        String node = args[3];
        byte[] data = "sasl".getBytes(StandardCharsets.UTF_8);
        if (curator) {
            runCurator(hosts, node, data);
        } else {
            runZooKeeper(hosts, node, data);
        }
    }

    private static void runZooKeeper(String hosts, String node, byte[] data) throws Exception {
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
            String outcome;
            try {
                zk.create(node, data, ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.EPHEMERAL);
                outcome = "ok " + new String(zk.getData(node, false, null), StandardCharsets.UTF_8);
                System.out.println("acl: " + describe(zk.getACL(node, null)));
                StringBuilder who = new StringBuilder();
                for (ClientInfo c : zk.whoAmI()) {
                    who.append(c.getAuthScheme()).append(':').append(c.getUser()).append(' ');
                }
                System.out.println("whoami: " + who.toString().trim());
            } catch (KeeperException e) {
                outcome = "KeeperException " + e.code().name();
            }
            System.out.println("request: " + outcome);
            Thread.sleep(SETTLE_MS);
            System.out.println("states: " + String.join(",", states));
        } finally {
            zk.close();
        }
    }

    private static void runCurator(String hosts, String node, byte[] data) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(hosts)
            .sessionTimeoutMs(10000)
            .connectionTimeoutMs(10000)
            .retryPolicy(new RetryOneTime(100))
            .build();
        c.start();
        try {
            if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
                System.out.println("connected: no");
                System.exit(1);
            }
            c.create().withMode(CreateMode.EPHEMERAL).withACL(ZooDefs.Ids.CREATOR_ALL_ACL)
                .forPath(node, data);
            System.out.println("request: ok " + new String(c.getData().forPath(node),
                                                           StandardCharsets.UTF_8));
            System.out.println("acl: " + describe(c.getACL().forPath(node)));
        } catch (KeeperException e) {
            System.out.println("request: KeeperException " + e.code().name());
        } finally {
            c.close();
        }
    }

    private static String describe(List<ACL> acls) {
        StringBuilder b = new StringBuilder();
        for (ACL a : acls) {
            b.append(a.getId().getScheme()).append(':').append(a.getId().getId())
                .append(':').append(a.getPerms()).append(' ');
        }
        return b.toString().trim();
    }
}
