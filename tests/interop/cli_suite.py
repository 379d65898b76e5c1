"""The rzk binary's client commands against a server: the same commands must work against
Apache ZooKeeper and rzk. Uses target/debug/rzk (or $RZK_BIN).

    /usr/bin/python3 -m tests.interop.cli_suite --server zookeeper|rzk
"""

import json
import os
import signal
import subprocess
import tempfile
import time

from tests.interop.common import Suite, check, check_eq, wait_until
from tests.support import servers

# A small tick so that ZooKeeper's expiry buckets stay well inside "timeout + 1 s".
suite = Suite("cli", overall_timeout_s=150, server_options={"tick_ms": 200})
RZK = servers.rzk_binary()
WORKER = ('trap \'echo "stop $RZK_PARTICIPANT_ID" >> "$LOG"; exit 0\' TERM; '
          'echo "start $RZK_PARTICIPANT_ID $RZK_FENCING_TOKEN $$" >> "$LOG"; '
          'while true; do sleep 0.05; done')


def rzk(srv, *args, timeout=30):
    return subprocess.run([RZK, "--connect", srv.hosts] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def elect(srv, path, pid, log, *extra, session_timeout_ms=2000):
    return subprocess.Popen([RZK, "--connect", srv.hosts, "elect", path, "--id", pid,
                             "--session-timeout-ms", str(session_timeout_ms),
                             "--grace-ms", "200"] + list(extra) +
                            ["--", "sh", "-c", WORKER],
                            env=dict(os.environ, LOG=log), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def lines(log):
    try:
        with open(log) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@suite.test
def node_commands(srv):
    r = rzk(srv, "create", "/cli", "v1")
    check_eq((r.returncode, r.stdout), (0, "Created /cli\n"), "create")
    check_eq(rzk(srv, "create", "-s", "/cli/job-", "x").stdout, "Created /cli/job-0000000000\n", "create -s")
    check_eq(rzk(srv, "get", "/cli").stdout, "v1\n", "get")
    check_eq(rzk(srv, "set", "/cli", "v2").returncode, 0, "set")
    check("dataVersion = 1" in rzk(srv, "stat", "/cli").stdout, "stat shows the version")
    check_eq(rzk(srv, "ls", "/cli").stdout, "[job-0000000000]\n", "ls")
    r = rzk(srv, "get", "/cli/none")
    check_eq(r.returncode, 2, "exit status for a missing node")
    check("node /cli/none does not exist" in r.stderr, "clear error: %r" % r.stderr)
    r = rzk(srv, "create", "relative")
    check_eq(r.returncode, 2, "exit status for a bad path")
    check_eq(rzk(srv, "delete", "-r", "/cli").returncode, 0, "delete -r")
    check_eq(rzk(srv, "get", "/cli").returncode, 2, "gone after delete -r")


@suite.test
def killed_leader_fails_over_and_leader_json_shows_the_queue(srv):
    log = tempfile.mktemp(prefix="rzk-cli-")
    a = elect(srv, "/cli/e1", "a", log)
    wait_until(lambda: any(l.startswith("start a") for l in lines(log)), 15, "a to lead")
    b = elect(srv, "/cli/e1", "b", log)
    try:
        r = rzk(srv, "leader", "/cli/e1", "--json")
        check(r.stdout.startswith('{"leader":{"id":"a"'), "leader json: %r" % r.stdout)
        wait_until(lambda: rzk(srv, "leader", "/cli/e1", "--json").stdout.count('"id":') == 3, 10,
                   "b to queue")
        a_pid = [l for l in lines(log) if l.startswith("start a")][0].split()[3]
        killed = time.monotonic()
        a.kill()
        a.wait()
        wait_until(lambda: any(l.startswith("start b") for l in lines(log)), 2.0 + 1.0 + 1.0,
                   "b to take over within the session timeout + 1 s")
        took = time.monotonic() - killed
        check(took < 3.0, "failover took %.2fs" % took)
        tokens = [int(l.split()[2]) for l in lines(log) if l.startswith("start")]
        check(tokens == sorted(tokens) and len(set(tokens)) == len(tokens), "tokens grow: %r" % tokens)
        # The watchdog of the killed rzk stopped its command (SIGTERM: "stop a") before b led.
        order = [l.split()[0] + " " + l.split()[1] for l in lines(log)]
        check("stop a" in order and order.index("stop a") < order.index("start b"),
              "a's command stopped before b started: %r" % lines(log))
        try:
            os.killpg(int(a_pid), signal.SIGKILL)
            check(False, "the command of the killed rzk elect still runs")
        except ProcessLookupError:
            pass
    finally:
        stop(a)
        stop(b)


@suite.test
def sigterm_stops_the_command_and_resigns_at_once(srv):
    log = tempfile.mktemp(prefix="rzk-cli-")
    # T = 4 s (the most tick 200 allows): the server could expire a's session 3.3 s after its
    # last heartbeat at the earliest, so a handover under 2.5 s can only be the resign.
    a = elect(srv, "/cli/e2", "a", log, session_timeout_ms=4000)
    wait_until(lambda: any(l.startswith("start a") for l in lines(log)), 15, "a to lead")
    b = elect(srv, "/cli/e2", "b", log, session_timeout_ms=4000)
    try:
        wait_until(lambda: rzk(srv, "leader", "/cli/e2", "--json").stdout.count('"id":') == 3, 10,
                   "b to queue")
        t0 = time.monotonic()
        a.send_signal(signal.SIGTERM)
        check_eq(a.wait(10), 143, "rzk elect exit status after SIGTERM")
        wait_until(lambda: any(l.startswith("start b") for l in lines(log)), 10, "b to lead")
        check(time.monotonic() - t0 < 2.5, "a clean resign hands over at once, not after expiry")
        ls = lines(log)
        check(ls.index("stop a") < [i for i, l in enumerate(ls) if l.startswith("start b")][0],
              "a's command stopped before b's started: %r" % ls)
        check("resigned" in a.stderr.read(), "state changes on stderr")
    finally:
        stop(a)
        stop(b)


@suite.test
def selector_recipe_hands_over_when_the_command_exits(srv):
    log = tempfile.mktemp(prefix="rzk-cli-")
    once = 'echo "start $RZK_PARTICIPANT_ID" >> "$LOG"; sleep 0.3; exit 3'
    procs = []
    try:
        for pid in ["x", "y"]:
            procs.append(subprocess.Popen(
                [RZK, "--connect", srv.hosts, "elect", "/cli/sel", "--recipe", "selector", "--id", pid,
                 "--session-timeout-ms", "2000", "--", "sh", "-c", once],
                env=dict(os.environ, LOG=log), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True, start_new_session=True))
            # x must have started before y exists, however slowly processes start
            wait_until(lambda: ("start %s" % pid) in lines(log), 15, "%s to start" % pid)
        check_eq(procs[0].wait(15), 3, "exit status of the command")
        check_eq(procs[1].wait(15), 3, "second candidate ran after the first")
        check_eq(lines(log), ["start x", "start y"], "one at a time, in order")
    finally:
        for p in procs:
            stop(p)


@suite.test
def bench_hands_off_at_the_protocol_level(srv):
    # rzk bench's server-neutral handoffs, which the benchmark scripts run on both
    # servers: to the successor's event, and on to the list it reads on that event.
    for w in ("handoff-event", "handoff-read"):
        r = rzk(srv, "bench", "--workload", w, "--participants", "3", "--gap-ms", "2",
                "--duration-s", "0.5", "--json")
        check_eq(r.returncode, 0, "%s exit status (stderr: %s)" % (w, r.stderr[-300:]))
        out = json.loads(r.stdout.strip().splitlines()[-1])
        check(out["workload"] == w and out["ops"] > 0 and out["errors"] == 0,
              "%s handed off without errors: %r" % (w, out))
    # A node that sorts before every participant's: handoff-read's successor is not first in
    # its list, and the run stops instead of counting that handoff.
    p = subprocess.Popen([RZK, "--connect", srv.hosts, "bench", "--workload", "handoff-read",
                          "--participants", "3", "--gap-ms", "5", "--duration-s", "30", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        foreign = "/bench/handoff-%d/a-0" % p.pid
        wait_until(lambda: rzk(srv, "create", foreign).returncode == 0, 10,
                   "the election's parent to appear")
        _, err = p.communicate(timeout=20)
        check(p.returncode != 0, "handoff-read stopped on a successor that is not first")
        check("is not first after its predecessor's deletion" in err, "clear error: %r" % err)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


if __name__ == "__main__":
    suite.main()
