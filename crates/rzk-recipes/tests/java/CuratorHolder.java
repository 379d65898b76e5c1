// One Apache Curator 5.4 lock holder that prints the lines of the Rust participant
// (src/bin/participant.rs), so that the fault tests (tests/t61_mixed_faults.rs) read both
// languages with one parser and judge them with one checker:
//
//   java -cp ... CuratorHolder HOST:PORT PATH ID mutex|semaphore:N WITNESS
//
//   joined <path>                 before its first acquire
//   elected <czxid> <node>        holding: its lock node (a semaphore: its lease node)
//   elected <czxid> <node> stale  holding, by Curator's account, a node of an earlier session
//   write ok <token> <mzxid> | write refused <reason> | write unknown <reason>
//   lost <reason>                 SUSPENDED or LOST seen while holding
//   acquire failed <reason>       an acquire threw; it tries again
//
// While it holds it writes "<id>|<token>|<n>" to WITNESS every 50 ms in a transaction that first
// checks its node: the fencing a Curator user has to add, since Curator never rechecks a hold.
// Curator does not end a hold by itself when the connection goes: this holder stops at the first
// SUSPENDED (the policy Curator's documentation recommends), releases, and acquires again. A
// stopped process can apply no policy at all; then only the fenced writes keep it out.

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class CuratorHolder {
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** A held lock or lease: its node, and how to let go. */
    interface Hold {
        String node();

        void release() throws Exception;
    }

    interface Acquire {
        Hold acquire() throws Exception;
    }

    /** InterProcessMutex keeps the node of a hold to itself (a protected getter). */
    static class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String node() {
            return getLockPath();
        }
    }

    /**
     * Whether a hold is current, guarded by its own monitor: the connection listener ends it
     * and says "lost" the moment Curator reports SUSPENDED or LOST, so that the line marks when
     * this holder stops issuing writes, whatever write may still be retrying.
     */
    static final Object hold = new Object();
    static long losses = 0;
    static boolean holding = false;

    static void lose(String reason) {
        synchronized (hold) {
            losses++;
            if (holding) {
                holding = false;
                say("lost " + reason);
            }
            hold.notifyAll();
        }
    }

    /** Waits at most ms while the hold is current; returns whether it still is. */
    static boolean stillHolding(long ms) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        synchronized (hold) {
            while (holding) {
                long left = end - System.nanoTime();
                if (left <= 0) return true;
                TimeUnit.NANOSECONDS.timedWait(hold, left);
            }
            return false;
        }
    }

    static void write(CuratorFramework client, String witness, String node, long token, String data) {
        try {
            List<CuratorTransactionResult> results = client.transaction().forOperations(
                client.transactionOp().check().forPath(node),
                client.transactionOp().setData().forPath(witness, data.getBytes()));
            say("write ok " + token + " " + results.get(1).getResultStat().getMzxid());
        } catch (KeeperException.NoNodeException | KeeperException.BadVersionException
                 | KeeperException.SessionExpiredException e) {
            say("write refused " + e.code());
        } catch (Exception e) {
            say("write unknown " + e);
        }
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], id = args[2], recipe = args[3], witness = args[4];
        CuratorFramework client = CuratorParticipant.connect(connect);
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                lose(state.toString());
            }
        });

        Acquire acquire;
        if (recipe.equals("mutex")) {
            Mutex mutex = new Mutex(client, path);
            acquire = () -> {
                mutex.acquire();
                String node = mutex.node();
                return new Hold() {
                    public String node() { return node; }
                    public void release() throws Exception { mutex.release(); }
                };
            };
        } else if (recipe.startsWith("semaphore:")) {
            int leases = Integer.parseInt(recipe.substring("semaphore:".length()));
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
            acquire = () -> {
                Lease lease = semaphore.acquire();
                String node = path + "/leases/" + lease.getNodeName();
                return new Hold() {
                    public String node() { return node; }
                    public void release() { semaphore.returnLease(lease); }
                };
            };
        } else {
            throw new IllegalArgumentException("recipe " + recipe);
        }

        say("joined " + path);
        long n = 0;
        while (true) {
            Hold held;
            try {
                held = acquire.acquire();
            } catch (Exception e) {
                say("acquire failed " + e);
                Thread.sleep(200);
                continue;
            }
            // A loss after this point ends the hold; one before it did not stop the acquire,
            // which saw its node first in line on a live connection.
            long seen;
            synchronized (hold) {
                seen = losses;
            }
            Stat stat = null;
            try {
                stat = client.checkExists().forPath(held.node());
            } catch (Exception e) {
                say("acquire failed " + e);
            }
            long token = stat == null ? 0 : stat.getCzxid();
            // Curator checks only that its node is listed. Past a suspension as long as the
            // session timeout it starts a new session itself, yet a waiter then accepts the node
            // its old session made, which the server keeps until that session expires (a
            // restarted ZooKeeper gives every session a new timeout): a hold of a dead session.
            long session = client.getZookeeperClient().getZooKeeper().getSessionId();
            String stale = stat != null && stat.getEphemeralOwner() != session ? " stale" : "";
            synchronized (hold) {
                if (stat != null && losses == seen) {
                    holding = true;
                    say("elected " + token + " " + held.node() + stale);
                }
            }
            while (stillHolding(0)) {
                write(client, witness, held.node(), token, id + "|" + token + "|" + ++n);
                stillHolding(50);
            }
            try {
                held.release();
            } catch (Exception e) {
                // The node goes with the session, or by Curator's guaranteed delete once
                // connected again.
            }
        }
    }
}
