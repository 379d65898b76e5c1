"""The web console (`rzk ui`) in a real browser: Debian's Chromium, headless, driven through
chromium-driver by Debian's python3-selenium, against rzk server and Apache ZooKeeper 3.8.

    /usr/bin/python3 -m tests.interop.console_suite --server zookeeper|rzk

On one election path: three `rzk elect` candidates and a Java Curator 5.4 LeaderLatch; on one
lock path: an `rzk lock` holder and two waiters. The console's pages must show the leader, the
queue in order, the holder and the waiters; when the leader stops, the election page (left open,
not reloaded) must show its successor within a second of the leader's node going, as kazoo's
watch sees it. Nodes named and filled with HTML and JavaScript must render as text and run
nothing. Screenshots are written to $RZK_CONSOLE_SHOTS (default target/console-screenshots/),
which CI keeps as artifacts; README's picture is one of them.
"""

import os
import signal
import subprocess
import tempfile
import threading
import time

from kazoo.client import KazooClient
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from tests.interop.common import Failure, Suite, check, check_eq, wait_until
from tests.support import java, servers
from tests.support.net import free_port

suite = Suite("console", overall_timeout_s=240, server_options={"tick_ms": 200})
RZK = servers.rzk_binary()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOTS = os.environ.get("RZK_CONSOLE_SHOTS") or os.path.join(REPO, "target", "console-screenshots")
CURATOR_SOURCES = os.path.join(REPO, "crates", "rzk-recipes", "tests", "java")
# A leader's successor on the open page, from the moment kazoo sees the leader's node go.
LIVE_WITHIN_S = 1.0
ELECTION = "/jobs/report"
LOCK = "/locks/nightly"
WORK = "trap 'exit 0' TERM; while true; do sleep 0.05; done"


class Processes:
    """The candidates, holders and the console, stopped (process group and all) at the end."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM):
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p)


def browser():
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def shot(driver, server_kind, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, "%s-%s.png" % (name, server_kind))
    driver.save_screenshot(path)
    print("    screenshot %s" % os.path.relpath(path, REPO))


def start_console(procs, srv, *flags):
    port = free_port()
    p = procs.start([RZK, "--connect", srv.hosts, "ui", "--bind", "127.0.0.1:%d" % port]
                    + list(flags))
    line = p.stdout.readline()
    check("rzk console on http://127.0.0.1:%d/" % port in line, "rzk ui printed %r" % line)
    return "http://127.0.0.1:%d" % port


def candidate(procs, srv, pid):
    return procs.start([RZK, "--connect", srv.hosts, "elect", ELECTION, "--id", pid,
                        "--session-timeout-ms", "4000", "--grace-ms", "100", "--",
                        "sh", "-c", WORK])


def curator_latch(procs, srv):
    try:
        java.compile_harness("CuratorParticipant", 120, source_dir=CURATOR_SOURCES)
    except java.JavaError as e:
        raise Failure(str(e))
    log = os.path.join(tempfile.mkdtemp(prefix="rzk-console-"), "curator.log")
    cmd = java.harness_command("CuratorParticipant", [srv.hosts, ELECTION, "latch", "curator"],
                               "128m", log)
    return procs.start(cmd, stdin=subprocess.PIPE)


def joined(p):
    """Waits for a Curator participant's "joined" line."""
    line = p.stdout.readline()
    check(line.startswith("joined"), "the Curator participant printed %r" % line)


def texts(driver, css):
    """The text of every element `css` selects. A live page replaces its <main> as it
    refreshes, which makes elements found before it stale: then the page is read again."""
    for _ in range(50):
        try:
            return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]
        except StaleElementReferenceException:
            time.sleep(0.02)
    raise Failure("the page kept changing under %s" % css)


def leader_text(driver):
    found = texts(driver, "strong.leader")
    return found[0] if found else None


def column(driver, n):
    """The members table's column n, top to bottom."""
    return texts(driver, "table.members tbody td:nth-child(%d)" % n)


@suite.test
def the_console_shows_leader_queue_holder_and_waiters_live(srv):
    procs = Processes()
    zk = KazooClient(hosts=srv.hosts)
    zk.start(timeout=30)
    driver = browser()
    try:
        # The election: rzk's three candidates, then Curator's, in that order.
        cands = {}
        for pid in ("alpha", "bravo", "charlie"):
            cands[pid] = candidate(procs, srv, pid)
            wait_until(lambda: len(zk.get_children(ELECTION) if zk.exists(ELECTION) else [])
                       == len(cands), 30, "%s to join" % pid)
        curator = curator_latch(procs, srv)
        joined(curator)
        holders = [procs.start([RZK, "--connect", srv.hosts, "lock", LOCK, "--id", "job-%d" % i,
                                "--", "sh", "-c", WORK]) for i in (1, 2, 3)]
        wait_until(lambda: zk.exists(LOCK) and len(zk.get_children(LOCK)) == 3, 30,
                   "the lock's holder and two waiters to queue")
        url = start_console(procs, srv)

        driver.get(url + "/")
        main = texts(driver, "#main")[0]
        for want in ("Elections", ELECTION, "LeaderLatch", "Locks", LOCK):
            check(want in main, "the overview lacks %r: %s" % (want, main))
        shot(driver, srv.kind, "overview")

        driver.get(url + "/recipe?path=%s&kind=mutex" % LOCK)
        roles, ids = column(driver, 2), column(driver, 3)
        check_eq(roles, ["holds (exclusive)", "waits (exclusive)", "waits (exclusive)"], "lock roles")
        check_eq(sorted(ids), ["job-1", "job-2", "job-3"], "lock ids")
        shot(driver, srv.kind, "lock")

        driver.get(url + "/recipe?path=%s&kind=latch" % ELECTION)
        wait_until(lambda: texts(driver, "#live") == ["live"], 10,
                   "the page's event stream to open")
        check_eq(column(driver, 3), ["alpha", "bravo", "charlie", "curator"], "the queue")
        check_eq(leader_text(driver), "alpha", "the leader")
        shot(driver, srv.kind, "election")

        # The leader stops; the open page shows bravo, from the node's end, within a second.
        leader_node = [c for c in zk.get_children(ELECTION)
                       if zk.get(ELECTION + "/" + c)[0] == b"alpha"][0]
        gone = []
        zk.exists(ELECTION + "/" + leader_node, watch=lambda e: gone.append(time.monotonic()))
        procs.stop(cands["alpha"])
        wait_until(lambda: gone, 10, "the leader's node to go")
        wait_until(lambda: leader_text(driver) == "bravo", 10, "the page to show bravo leading")
        took = time.monotonic() - gone[0]
        print("    the page showed the new leader %.0f ms after the node went" % (took * 1e3))
        check(took <= LIVE_WITHIN_S, "the page took %.2f s (limit %.1f s)" % (took, LIVE_WITHIN_S))
        check_eq(column(driver, 3), ["bravo", "charlie", "curator"], "the queue after")
        # The page's timeline of the terms it saw: bravo's, then alpha's, newest first.
        terms = wait_until(lambda: [t.split(" ", 1)[1] for t in texts(driver, "#terms li")]
                           if len(texts(driver, "#terms li")) == 2 else None, 5, "two terms")
        check(terms[0].startswith("bravo (token ") and terms[1].startswith("alpha (token "),
              "the timeline: %r" % terms)
        shot(driver, srv.kind, "election-after")
    finally:
        driver.quit()
        zk.stop()
        procs.stop_all()


@suite.test
def markup_in_names_and_data_is_text_and_runs_nothing(srv):
    procs = Processes()
    zk = KazooClient(hosts=srv.hosts)
    zk.start(timeout=30)
    driver = browser()
    try:
        name = "<img src=x onerror=\"document.title='pwned'\">"
        data = b"<script>document.title='pwned'</script><b>bold</b>"
        zk.create("/xss", b"<svg onload=\"document.title='pwned'\">")
        zk.create("/xss/" + name, data)
        url = start_console(procs, srv)
        for page in ("/tree?path=/xss", "/"):
            driver.get(url + page)
            time.sleep(0.5)  # an onerror would have fired by now
            check(driver.title != "pwned", "a payload ran on %s" % page)
            try:
                driver.switch_to.alert
                raise Failure("an alert is open on %s" % page)
            except NoAlertPresentException:
                pass
        driver.get(url + "/tree?path=/xss")
        main = driver.find_element(By.ID, "main")
        check(name in main.text, "the child's name is not shown as text: %s" % main.text)
        check_eq(driver.find_elements(By.CSS_SELECTOR, "main img, main svg, main b"), [],
                 "elements made from the tree")
        driver.find_element(By.LINK_TEXT, name).click()
        text = driver.find_element(By.CSS_SELECTOR, "pre.data").text
        check_eq(text, data.decode(), "the child's data")
        check(driver.title != "pwned", "a payload ran on the child's page")
        shot(driver, srv.kind, "markup-as-text")
    finally:
        driver.quit()
        zk.stop()
        procs.stop_all()


@suite.test
def a_participant_asked_to_go_from_the_page_hands_over(srv):
    """With --allow-writes: the leader's row has "Ask to go…"; the confirmation page names
    its node and version; confirmed, the node goes and the next candidate leads."""
    procs = Processes()
    zk = KazooClient(hosts=srv.hosts)
    zk.start(timeout=30)
    driver = browser()
    path = "/jobs/asked"
    try:
        for pid in ("first", "second"):
            procs.start([RZK, "--connect", srv.hosts, "elect", path, "--id", pid, "--",
                         "sh", "-c", WORK])
            wait_until(lambda: zk.exists(path) and len(zk.get_children(path)) >= (1 if pid == "first" else 2),
                       30, "%s to join" % pid)
        url = start_console(procs, srv, "--allow-writes")
        driver.get(url + "/recipe?path=%s&kind=latch" % path)
        check_eq(leader_text(driver), "first", "the leader")
        leader_node = [c for c in zk.get_children(path) if zk.get(path + "/" + c)[0] == b"first"][0]
        driver.find_elements(By.CSS_SELECTOR, "table.members tbody tr")[0] \
            .find_element(By.TAG_NAME, "button").click()
        wait_until(lambda: "Confirm" in driver.page_source, 10, "the confirmation page")
        check(leader_node in texts(driver, "h1")[0], "the confirmation names the node: %s"
              % texts(driver, "h1"))
        shot(driver, srv.kind, "ask-to-go")
        driver.find_element(By.CSS_SELECTOR, "form.confirm button").click()
        wait_until(lambda: not zk.exists(path + "/" + leader_node), 10, "the node to go")
        driver.get(url + "/recipe?path=%s&kind=latch" % path)
        wait_until(lambda: leader_text(driver) == "second", 10, "second to lead")
    finally:
        driver.quit()
        zk.stop()
        procs.stop_all()


@suite.test
def the_console_on_rzk_servers_admin_port_links_within_its_mount(srv):
    """`rzk server --console` (its own server, whichever `srv` is): the console under
    /console/ of the AdminServer's port, reached by clicking its links, shows a candidate
    leading and follows it live; the AdminServer's commands still answer beside it."""
    procs = Processes()
    driver = browser()
    port, admin = free_port(), free_port()
    try:
        server = procs.start([RZK, "server", "--in-memory", "--bind", "127.0.0.1", "--port",
                              str(port), "--tick-ms", "200", "--admin-port", str(admin),
                              "--admin-bind", "127.0.0.1", "--console"])
        hosts = "127.0.0.1:%d" % port
        wait_until(lambda: "serving on" in server.stdout.readline(), 30, "rzk server to serve")
        # The pipe must not fill while the server logs.
        threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
        path = "/jobs/mounted"
        procs.start([RZK, "--connect", hosts, "elect", path, "--id", "solo", "--",
                     "sh", "-c", WORK])
        base = "http://127.0.0.1:%d" % admin
        driver.get(base + "/console")
        check(driver.current_url == base + "/console/", "redirected to %s" % driver.current_url)
        wait_until(lambda: driver.find_elements(By.LINK_TEXT, path) or driver.refresh(), 30,
                   "the overview to list %s" % path)
        driver.find_element(By.LINK_TEXT, path).click()
        check(driver.current_url.startswith(base + "/console/recipe?"),
              "the link stayed under the mount: %s" % driver.current_url)
        check_eq(leader_text(driver), "solo", "the leader")
        wait_until(lambda: texts(driver, "#live") == ["live"], 10,
                   "the page's event stream to open")
        shot(driver, srv.kind, "election-on-admin-port")
        driver.get(base + "/commands/ruok")
        check('"command"' in driver.page_source, "the commands answer beside the console")
    finally:
        driver.quit()
        procs.stop_all()


if __name__ == "__main__":
    suite.main()
