// Queue and counter benchmarks of Apache Curator 5.4 against a ZooKeeper-protocol server
// (docs/BENCHMARKS.md): the counterparts of `rzk bench --workload queue-pairs | counter-add`.
// Started by scripts/bench-curator.py, which starts the server, compiles this file against
// Debian's jars and collects the JSON line it prints.
//
//   java -cp build:JARS QueueBench HOST:PORT queue N SECONDS
//   java -cp build:JARS QueueBench HOST:PORT counter N SECONDS
//
// Every producer, consumer or client has its own CuratorFramework (its own connection and
// session) and a thread that loops. Measured for SECONDS after LockBench's warm-up, as rzk
// bench measures its side:
//   queue    SimpleDistributedQueue, N producers and N consumers; producers offer while fewer
//            than BACKLOG items wait, consumers take(): pairs per second, latency from an
//            item's offer() call to its take() returning
//   counter  DistributedAtomicLong, N clients calling increment() with the optimistic retry
//            rzk-recipes' RetryPolicy::default() matches (20 attempts, backoff from 1 ms up to
//            100 ms): successful increments per second; an increment that ran out of retries
//            (succeeded() false) counts as an error

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.Semaphore;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;

public class QueueBench {
    static final int BACKLOG = 64;  // items offered and not yet taken, at most

    // The window, the samples, the client settings and the JSON line are LockBench's: the
    // same harness measures both sides' loops alike.
    static CuratorFramework newClient() throws Exception {
        return LockBench.newClients(1).get(0);
    }

    static void measureAndEmit(String measurement, String recipe, int n, double seconds)
            throws Exception {
        LockBench.measure(null, null, 0, seconds);
        LockBench.emit(measurement, recipe, n, seconds, Map.of());
    }

    static void queue(int n, double seconds) throws Exception {
        String path = "/bench-queue/q-" + System.nanoTime();
        Semaphore backlog = new Semaphore(BACKLOG);
        for (int i = 0; i < n; i++) {
            SimpleDistributedQueue producer = new SimpleDistributedQueue(newClient(), path);
            SimpleDistributedQueue consumer = new SimpleDistributedQueue(newClient(), path);
            LockBench.contender("producer-" + i, () -> {
                backlog.acquire();
                producer.offer(ByteBuffer.allocate(8).putLong(System.nanoTime()).array());
            });
            LockBench.contender("consumer-" + i, () -> {
                byte[] item = consumer.take();
                long at = System.nanoTime();
                backlog.release();
                LockBench.record(ByteBuffer.wrap(item).getLong(), at);
            });
        }
        LockBench.progress("queue N=%d: producers and consumers started", n);
        measureAndEmit("queue_pairs", "Curator 5.4 SimpleDistributedQueue", n, seconds);
    }

    static void counter(int n, double seconds) throws Exception {
        String path = "/bench-counter/c-" + System.nanoTime();
        for (int i = 0; i < n; i++) {
            // Retries after the first attempt: 19, so 20 attempts as rzk-recipes' default.
            DistributedAtomicLong c = new DistributedAtomicLong(newClient(), path,
                    new BoundedExponentialBackoffRetry(1, 100, 19));
            LockBench.contender("counter-" + i, () -> {
                long t = System.nanoTime();
                AtomicValue<Long> v = c.increment();
                if (v.succeeded()) {
                    LockBench.record(t, System.nanoTime());
                } else {
                    LockBench.errors.incrementAndGet();
                }
            });
        }
        LockBench.progress("counter N=%d: clients started", n);
        measureAndEmit("counter_add", "Curator 5.4 DistributedAtomicLong", n, seconds);
    }

    public static void main(String[] a) throws Exception {
        LockBench.connect = a[0];
        switch (a[1]) {
            case "queue":
                queue(Integer.parseInt(a[2]), Double.parseDouble(a[3]));
                break;
            case "counter":
                counter(Integer.parseInt(a[2]), Double.parseDouble(a[3]));
                break;
            default:
                throw new IllegalArgumentException("unknown measurement " + a[1]);
        }
        // Takes still waiting end with the JVM; the server is stopped right after.
        System.exit(0);
    }
}
