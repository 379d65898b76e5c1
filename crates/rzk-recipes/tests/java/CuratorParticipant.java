// One Apache Curator 5.4 election participant, driven by a Rust test (tests/t60_mixed.rs).
//
//   java -cp ... CuratorParticipant HOST:PORT PATH latch|selector|mutex|read|write|semaphore:N ID [WORK_MS]
//
// Prints one line per event on stdout, "<event> <details>":
//   joined <ourPath or ->       once our node exists
//   elected                     isLeader() / takeLeadership() started
//   lost                        notLeader() / takeLeadership() returned or was interrupted
//   participants <id,id,...>    answer to the "participants" command (getParticipants order)
//   closed                      answer to "close"
// Commands on stdin, one per line: "participants", "close", "exit".
// A LeaderLatch closes with CloseMode.NOTIFY_LEADER. A LeaderSelector has autoRequeue() and a
// takeLeadership() that sleeps WORK_MS (default 200), the LeaderSelectorListenerAdapter policy.
// A mutex (InterProcessMutex) is acquired once on a thread of its own: "elected" when acquired,
// held WORK_MS, released, then "lost"; "joined -" once the acquire has started. "read" and
// "write" do the same with the read or the write side of an InterProcessReadWriteLock.
// A semaphore:N (InterProcessSemaphoreV2 of N leases) takes one lease the same way.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorParticipant {
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Releases what an {@link Acquire} took. */
    interface Release {
        void release() throws Exception;
    }

    /** Blocks until held; returns how to let go. */
    interface Acquire {
        Release acquire() throws Exception;
    }

    /**
     * Acquires once on a thread of its own: "elected" when held, held workMs, released, then
     * "lost"; says "joined -" once the acquire has started.
     */
    static void holdOnce(Acquire acquire, long workMs) {
        Thread holder = new Thread(() -> {
            try {
                Release release = acquire.acquire();
                say("elected");
                Thread.sleep(workMs);
                release.release();
                say("lost");
            } catch (Exception e) {
                say("error " + e);
            }
        });
        holder.setDaemon(true);
        holder.start();
        say("joined -");
    }

    /** A started, connected client with the Rust participants' session timeout (4 s). */
    static CuratorFramework connect(String connect) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .sessionTimeoutMs(4000)
            .connectionTimeoutMs(4000)
            .retryPolicy(new ExponentialBackoffRetry(100, 3))
            .build();
        client.start();
        client.blockUntilConnected();
        return client;
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], recipe = args[2], id = args[3];
        long workMs = args.length > 4 ? Long.parseLong(args[4]) : 200;
        CuratorFramework client = connect(connect);

        LeaderLatch latch = null;
        LeaderSelector selector = null;
        if (recipe.equals("mutex") || recipe.equals("read") || recipe.equals("write")) {
            InterProcessMutex mutex;
            if (recipe.equals("mutex")) {
                mutex = new InterProcessMutex(client, path);
            } else {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                mutex = recipe.equals("read") ? rw.readLock() : rw.writeLock();
            }
            holdOnce(() -> {
                mutex.acquire();
                return mutex::release;
            }, workMs);
        } else if (recipe.startsWith("semaphore:")) {
            int maxLeases = Integer.parseInt(recipe.substring("semaphore:".length()));
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, maxLeases);
            holdOnce(() -> {
                Lease lease = semaphore.acquire();
                return () -> semaphore.returnLease(lease);
            }, workMs);
        } else if (recipe.equals("latch")) {
            latch = new LeaderLatch(client, path, id, LeaderLatch.CloseMode.NOTIFY_LEADER);
            latch.addListener(new LeaderLatchListener() {
                public void isLeader() { say("elected"); }
                public void notLeader() { say("lost"); }
            });
            latch.start();
            while (latch.getOurPath() == null) Thread.sleep(5);
            say("joined " + latch.getOurPath());
        } else {
            selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                public void takeLeadership(CuratorFramework c) throws Exception {
                    say("elected");
                    try {
                        Thread.sleep(workMs);
                    } finally {
                        say("lost");
                    }
                }
            });
            selector.setId(id);
            selector.autoRequeue();
            selector.start();
            // The selector's node is not exposed (CURATOR-637): wait until it is listed.
            while (true) {
                boolean listed = false;
                for (Participant p : selector.getParticipants()) listed |= p.getId().equals(id);
                if (listed) break;
                Thread.sleep(5);
            }
            say("joined -");
        }

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String cmd;
        while ((cmd = in.readLine()) != null) {
            cmd = cmd.trim();
            if (cmd.equals("participants")) {
                List<String> ids = new ArrayList<>();
                if (latch == null && selector == null) continue;
                for (Participant p : latch != null ? latch.getParticipants() : selector.getParticipants()) {
                    ids.add(p.getId() + (p.isLeader() ? "*" : ""));
                }
                say("participants " + String.join(",", ids));
            } else if (cmd.equals("close")) {
                if (latch != null) latch.close(); else if (selector != null) selector.close();
                say("closed");
            } else if (cmd.equals("exit")) {
                break;
            }
        }
        client.close();
        System.exit(0);
    }
}
