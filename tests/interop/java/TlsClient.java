// The Apache ZooKeeper 3.8 Java client over TLS: `zookeeper.client.secure=true` with
// ClientCnxnSocketNetty and PEM key and trust stores, as an operator configures it.
// Usage: java -cp ... TlsClient HOST:SECURE_PORT CA.pem KEYSTORE.pem|none NODE
// Runs CRUD and a watch under NODE, then prints what it observed, one `key: value` line each,
// for tests/interop/tls_suite.py to compare with what ZooKeeper 3.8 makes it observe.

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;

public class TlsClient {
    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        String node = args[3];
        ZKClientConfig config = new ZKClientConfig();
        config.setProperty("zookeeper.client.secure", "true");
        config.setProperty("zookeeper.clientCnxnSocket", "org.apache.zookeeper.ClientCnxnSocketNetty");
        config.setProperty("zookeeper.ssl.trustStore.location", args[1]);
        config.setProperty("zookeeper.ssl.trustStore.type", "PEM");
        if (!args[2].equals("none")) {
            config.setProperty("zookeeper.ssl.keyStore.location", args[2]);
            config.setProperty("zookeeper.ssl.keyStore.type", "PEM");
        }
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = (WatchedEvent e) -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        };
        ZooKeeper zk = new ZooKeeper(hosts, 10000, watcher, config);
        try {
            if (!connected.await(15, TimeUnit.SECONDS)) {
                System.out.println("connected: no");
                return;
            }
            System.out.println("connected: yes");
            crudAndWatch(zk, node);
            for (ClientInfo who : zk.whoAmI()) {
                if (who.getAuthScheme().equals("x509")) {
                    System.out.println("whoami x509: " + who.getUser());
                }
            }
            zk.create(node + "-mine", new byte[0], ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.EPHEMERAL);
            for (ACL acl : zk.getACL(node + "-mine", null)) {
                System.out.println("creator acl: " + acl.getId().getScheme() + ":" + acl.getId().getId());
            }
        } catch (KeeperException e) {
            System.out.println("error: " + e.code().name());
        } finally {
            zk.close();
        }
    }

    private static void crudAndWatch(ZooKeeper zk, String node) throws Exception {
        zk.create(node, "one".getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.OPEN_ACL_UNSAFE,
                  CreateMode.PERSISTENT);
        CountDownLatch changed = new CountDownLatch(1);
        String[] event = {"none"};
        byte[] data = zk.getData(node, (WatchedEvent e) -> {
            event[0] = e.getType().name();
            changed.countDown();
        }, null);
        System.out.println("read: " + new String(data, StandardCharsets.UTF_8));
        zk.setData(node, "two".getBytes(StandardCharsets.UTF_8), 0);
        changed.await(10, TimeUnit.SECONDS);
        System.out.println("watch: " + event[0]);
        System.out.println("reread: " + new String(zk.getData(node, false, null), StandardCharsets.UTF_8));
        zk.delete(node, 1);
        System.out.println("deleted: " + (zk.exists(node, false) == null));
    }
}
