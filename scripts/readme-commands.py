"""Runs the README's set-up and quickstart commands verbatim, in a fresh clone of HEAD, so the
README cannot drift from what works.

    /usr/bin/python3 -m scripts.readme-commands [--timeout-s 1200]

Run from the repository root. The commands are the indented code blocks under "## Set-up" and
"## Quickstart", one per line, each run with `sh -c` exactly as written, from the clone's root:

  * `demo` runs to completion and must succeed;
  * `cargo install --locked --path crates/rzk` installs into a directory of this run's own
    (CARGO_INSTALL_ROOT), whose `bin` the later commands find first on their PATH; an `rzk`
    command before it fails the check;
  * `scripts/test.sh` is SKIPPED: it is the whole test gate, which runs this script;
  * `server` starts in the background, and must accept connections on its port (2181: that
    port must be free);
  * the `elect` candidates start in the background; exactly one must lead (its command prints
    "leading with"), `rzk leader --json` must agree, and when the leader is stopped as with
    Ctrl-C the other must take over, as the README says;
  * `leader ... --watch` runs for a moment and must print the leader;
  * the `lock ... -- CMD` holders start in the background; `lock --status` runs once both
    have queued: exactly one must hold (its command prints "holding with <token>"), the status
    (as written, then `--json`) must show it holding and the other waiting, and when the holder
    is stopped as with Ctrl-C the other must hold, with a greater token;
  * the `config watch ... --exec` watchers start in the background; each `config set` must
    succeed and print the new version, and every watcher's command must then print
    "config v<that version>:" (the README's command does);
  * the `register ... -- CMD` instances start in the background; `services NAME --watch`
    must print the set with them, and after Ctrl-C on each instance the empty set;
  * `ui` starts in the background and must serve its `--bind` address: the overview must list
    the election and the lock the commands above made, and the election's page must name
    the candidate that leads after the takeover;
  * a command with `--connect` names hosts that are not here (the ensemble example): it must
    fail cleanly with "cannot connect", which shows its command line is valid;
  * any other command fails this check, so that a new README command gets a rule here.

Background processes are stopped at the end (SIGTERM to their process groups, SIGKILL after
10 s) and the clone is removed. CARGO_TARGET_DIR defaults to this checkout's target/ so the
clone reuses the built dependencies; the whole run is bounded by --timeout-s.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = ("## Set-up", "## Quickstart")
# The gate that runs this script: running it here would recurse.
SKIPPED = {"scripts/test.sh"}


class Failed(Exception):
    pass


def readme_commands(text):
    """The indented (4-space) code lines of the README's set-up and quickstart sections."""
    out, section = [], None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line.strip() if line.strip() in SECTIONS else None
        elif section and line.startswith("    ") and line.strip():
            out.append(line[4:].rstrip())
    return out


# The install command: rzk goes into a directory of the run's own (CARGO_INSTALL_ROOT), which
# the later commands find first on their PATH.
INSTALL = "cargo install --locked --path crates/rzk"


def rzk_args(command):
    """The rzk arguments of a `cargo run --release -- ...` or `rzk ...` command, or None."""
    m = re.match(r"(?:cargo run --release --|rzk) (.*)$", command)
    return m.group(1).split() if m else None


class Run:
    """The clone, its environment, its background processes and the run's deadline."""

    def __init__(self, clone, timeout_s):
        self.clone = clone
        self.deadline = time.monotonic() + timeout_s
        self.env = dict(os.environ)
        self.env.setdefault("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
        self.env.pop("RZK_CONNECT", None)
        self.background = []  # (command, Popen, output path)
        self.installed = False

    def left(self, cap_s):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Failed("out of time")
        return min(left, cap_s)

    def foreground(self, command, cap_s):
        try:
            p = subprocess.run(command, shell=True, cwd=self.clone, env=self.env,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=self.left(cap_s))
        except subprocess.TimeoutExpired:
            raise Failed("did not finish in time: %s" % command)
        return p.returncode, p.stdout + p.stderr

    def start(self, command):
        out = os.path.join(self.clone, ".readme-%d.out" % len(self.background))
        with open(out, "w") as f:
            p = subprocess.Popen(command, shell=True, cwd=self.clone, env=self.env,
                                 stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        self.background.append((command, p, out))
        return p, out

    def wait_for(self, what, pred, cap_s, interval_s=0.1):
        end = time.monotonic() + self.left(cap_s)
        while time.monotonic() < end:
            if pred():
                return
            time.sleep(interval_s)
        raise Failed("timed out waiting for %s" % what)

    def stop(self, p, sig=signal.SIGTERM):
        """Signals the command's process group (`cargo run` and the rzk it runs) and waits for
        the whole group, so that `rzk elect` has stopped its command before the server goes."""
        end = time.monotonic() + 10
        try:
            os.killpg(p.pid, sig)
            while group_alive(p.pid) and time.monotonic() < end:
                p.poll()
                time.sleep(0.05)
            if group_alive(p.pid):
                os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()

    def stop_all(self):
        for _, p, _ in reversed(self.background):
            self.stop(p)


def group_alive(pgid):
    """Whether any process of the group is still running (zombies do not count)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def flag(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def leads(candidate):
    """Whether the candidate's command has printed its line (cargo's "Running" line and rzk
    elect's "starting" line quote the command, so only a whole line counts)."""
    return re.search(r"^leading with \d+$", read(candidate[2]), re.M) is not None


def check_election(run, candidates):
    """Exactly one candidate leads, and `rzk leader --json` agrees."""
    leading = lambda: [c for c in candidates if leads(c)]
    run.wait_for("a candidate to lead", lambda: leading(), 300)
    time.sleep(1)  # a second leader, if there were one, would show by now
    if len(leading()) != 1:
        raise Failed("%d candidates lead at once" % len(leading()))
    leader = leading()[0]
    rzk = os.path.join(run.env["CARGO_TARGET_DIR"], "release", "rzk")
    path = flag(leader[0].split(), "elect")
    rc, out = run.foreground("%s leader %s --json" % (rzk, path), 30)
    view = json.loads(out) if rc == 0 else {}
    ids = [p["id"] for p in view.get("participants", [])]
    if view.get("leader", {}).get("id") != flag(leader[0].split(), "--id") or len(ids) != 2:
        raise Failed("rzk leader --json disagrees (rc %d): %s" % (rc, out))
    return leader


def holds(locker):
    """The fencing token the locker's command printed once it holds, or None."""
    m = re.search(r"^holding with (\d+)$", read(locker[2]), re.M)
    return int(m.group(1)) if m else None


def check_lock(run, lockers, command):
    """Exactly one locker holds, `rzk lock --status` (as written, then with --json) shows it
    holding and the other waiting, and after Ctrl-C on the holder the other holds."""
    if len(lockers) != 2:
        raise Failed("expected two lock holders before `lock --status`")
    holding = lambda: [l for l in lockers if holds(l) is not None]
    run.wait_for("a lock holder", lambda: holding(), 300)
    path = flag(lockers[0][0].split(), "lock")
    want = "%s (mutex): 1 holding, 1 waiting" % path
    shown = []

    def queued():
        rc, out = run.foreground(command, 30)
        shown[:] = [rc, out]
        return rc == 0 and want in out

    run.wait_for("`lock --status` to print %r" % want, queued, 120, interval_s=0.5)
    if len(holding()) != 1:
        raise Failed("%d lock holders at once" % len(holding()))
    holder = holding()[0]
    token = holds(holder)
    rzk = os.path.join(run.env["CARGO_TARGET_DIR"], "release", "rzk")
    rc, out = run.foreground("%s lock --status --json %s" % (rzk, path), 30)
    view = json.loads(out) if rc == 0 else {}
    held = [h["token"] for h in view.get("holders", [])]
    if held != [token] or len(view.get("waiters", [])) != 1:
        raise Failed("rzk lock --status --json disagrees (token %d, rc %d): %s" % (token, rc, out))
    print("  printed %r; --json agrees on token %d" % (want, token))
    other = [l for l in lockers if l is not holder][0]
    run.stop(holder[1], signal.SIGINT)  # Ctrl-C
    run.wait_for("the other lock holder to hold", lambda: holds(other) is not None, 30)
    if holds(other) <= token:
        raise Failed("token %d after %d" % (holds(other), token))
    print("  after Ctrl-C on the holder, the other holds with token %d" % holds(other))


def check_takeover(run, candidates, leader):
    follower = [c for c in candidates if c is not leader][0]
    run.stop(leader[1], signal.SIGINT)  # Ctrl-C
    run.wait_for("the other candidate to take over", lambda: leads(follower), 30)
    print("  after Ctrl-C on the leader, the other candidate leads")


def check_config_set(run, watchers, command):
    """`config set` succeeds and prints the version; every watcher's command runs with it."""
    rc, out = run.foreground(command, 300)
    versions = re.findall(r"^(\d+)$", out, re.M)
    if rc != 0 or not versions:
        raise Failed("config set: exit status %d: %s" % (rc, out[-2000:]))
    want = "config v%s:" % versions[-1]
    for w in watchers:
        run.wait_for("the config watcher to print %r" % want, lambda w=w: re.search(
            r"^" + re.escape(want), read(w[2]), re.M) is not None, 60)
    print("  version %s; %d watcher(s) printed %r" % (versions[-1], len(watchers), want))
def check_services_watch(run, instances, command, name):
    """`services NAME --watch` prints the set of the registered instances, then, after Ctrl-C
    on each registration (which unregisters it), the empty set."""
    if not instances:
        raise Failed("expected `register ... -- CMD` before `services --watch`")
    p, out = run.start(command)
    want = "%s: %d instance%s" % (name, len(instances), "" if len(instances) == 1 else "s")
    run.wait_for("`services --watch` to print %r" % want, lambda: want in read(out), 300)
    for instance in instances:
        run.stop(instance[1], signal.SIGINT)  # Ctrl-C
    empty = "%s: 0 instances" % name
    run.wait_for("`services --watch` to print %r" % empty, lambda: empty in read(out), 60)
    run.stop(p)
    print("  printed %r, then %r after Ctrl-C on the instances" % (want, empty))


def check_ui(run, command, candidates, lockers):
    """`rzk ui --bind ADDR` serves the console: its overview lists the README's election and
    lock, and the election's page names the candidate that leads now."""
    if not candidates or not lockers:
        raise Failed("expected the `elect` candidates and `lock` holders before `ui`")
    bind = flag(command.split(), "--bind", "127.0.0.1:8080")
    port = int(bind.rsplit(":", 1)[1])
    if port_open(port):
        raise Failed("port %d is already in use; the README's console needs it" % port)
    p, out = run.start(command)
    run.wait_for("the console on %s (%s)" % (bind, out),
                 lambda: port_open(port) or p.poll() is not None, 300)
    if p.poll() is not None:
        raise Failed("the console exited: %s" % read(out)[-3000:])
    election = rzk_args(candidates[0][0])[1]
    lock = [a for a in rzk_args(lockers[0][0]) if a.startswith("/")][0]
    overview = http_get("http://%s/" % bind)
    for path in (election, lock):
        if path not in overview:
            raise Failed("the console's overview does not list %s: %s" % (path, overview[-3000:]))
    leader = [c for c in candidates if c[1].poll() is None and leads(c)]
    want = '<strong class="leader">%s</strong>' % flag(leader[0][0].split(), "--id")
    page = http_get("http://%s/recipe?path=%s&kind=latch" % (bind, election))
    if want not in page:
        raise Failed("the console's election page lacks %r: %s" % (want, page[-3000:]))
    run.stop(p)
    print("  the overview lists %s and %s; the election page shows %s leading"
          % (election, lock, flag(leader[0][0].split(), "--id")))


def http_get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode("utf-8", "replace")


def run_readme(run, commands):
    instances = []
    candidates, lockers = [], []
    config_watchers = []
    for command in commands:
        print("$ " + command, flush=True)
        args = rzk_args(command)
        if command in SKIPPED:
            print("  skipped: the test gate itself, which runs this check")
        elif command == INSTALL:
            install(run, command)
        elif command.startswith("rzk ") and not run.installed:
            raise Failed("`rzk` is used before the README installs it (%s)" % INSTALL)
        elif args and "--connect" in args:
            rc, out = run.foreground(command, 600)
            if rc == 0 or "cannot connect" not in out:
                raise Failed("expected a clean 'cannot connect' (rc %d): %s" % (rc, out[-2000:]))
            print("  fails cleanly: those hosts are not here")
        elif args and args[0] == "demo":
            rc, out = run.foreground(command, 900)
            if rc != 0:
                raise Failed("exit status %d: %s" % (rc, out[-3000:]))
            print("  ok")
        elif args and args[0] == "server":
            port = int(flag(args, "--port", "2181"))
            if port_open(port):
                raise Failed("port %d is already in use; the README's server needs it" % port)
            p, out = run.start(command)
            run.wait_for("the server on port %d (%s)" % (port, out),
                         lambda: port_open(port) or p.poll() is not None, 900)
            if p.poll() is not None:
                raise Failed("the server exited: %s" % read(out)[-3000:])
            print("  serving on port %d" % port)
        elif args and args[0] == "elect":
            candidates.append((command,) + run.start(command))
            print("  started")
        elif args and args[0] == "leader" and "--watch" in args:
            if len(candidates) != 2:
                raise Failed("expected two candidates before `leader --watch`")
            leader = check_election(run, candidates)
            p, out = run.start(command)
            want = "leader of %s: %s" % (args[1], flag(leader[0].split(), "--id"))
            run.wait_for("`leader --watch` to print %r" % want, lambda: want in read(out), 60)
            run.stop(p)
            print("  printed %r" % want)
            check_takeover(run, candidates, leader)
        elif args and args[0] == "lock" and "--status" in args:
            check_lock(run, lockers, command)
        elif args and args[0] == "lock" and "--" in args:
            lockers.append((command,) + run.start(command))
            print("  started")
        elif args and args[:2] == ["config", "watch"] and "--exec" in args:
            config_watchers.append((command,) + run.start(command))
            print("  started")
        elif args and args[:2] == ["config", "set"]:
            check_config_set(run, config_watchers, command)
        elif args and args[0] == "register" and "--" in args:
            instances.append((command,) + run.start(command))
            print("  started")
        elif args and args[0] == "services" and "--watch" in args:
            check_services_watch(run, instances, command, args[1])
        elif args and args[0] == "ui":
            check_ui(run, command, candidates, lockers)
        else:
            raise Failed("no rule to run this README command; add one to %s" % __file__)


def install(run, command):
    """Runs the install into the run's own root, checks the binary it put there answers, and
    puts it first on the later commands' PATH."""
    root = os.path.join(run.clone, ".readme-install")
    run.env["CARGO_INSTALL_ROOT"] = root
    rc, out = run.foreground(command, 1800)
    binary = os.path.join(root, "bin", "rzk")
    if rc != 0 or not os.access(binary, os.X_OK):
        raise Failed("the install failed (exit %d): %s" % (rc, out[-3000:]))
    rc, version = run.foreground("%s --version" % binary, 60)
    if rc != 0 or not version.startswith("rzk "):
        raise Failed("the installed rzk does not answer --version: %s" % version)
    run.env["PATH"] = os.path.join(root, "bin") + os.pathsep + run.env.get("PATH", "")
    run.installed = True
    print("  installed %s" % version.strip())


def fresh_clone(clone):
    """A clone of this checkout's HEAD commit (a linked worktree's HEAD, or a detached one,
    need not be the default branch the plain clone would check out)."""
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", REPO, clone], check=True)
    subprocess.run(["git", "-C", clone, "fetch", "--quiet", REPO, head], check=True)
    subprocess.run(["git", "-C", clone, "checkout", "--quiet", "--detach", head], check=True)
    print("fresh clone of %s in %s" % (head[:12], clone))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout-s", type=float, default=1200)
    a = ap.parse_args()
    commands = readme_commands(read(os.path.join(REPO, "README.md")))
    if not commands:
        sys.exit("no commands found under %s in README.md" % " and ".join(SECTIONS))
    clone = tempfile.mkdtemp(prefix="rzk-readme-")
    run = Run(clone, a.timeout_s)
    try:
        fresh_clone(clone)
        run_readme(run, commands)
    except Failed as e:
        print("README check FAILED: %s" % e, file=sys.stderr)
        for command, p, out in run.background:
            print("---- %s\n%s" % (command, read(out)[-1500:]), file=sys.stderr)
        sys.exit(1)
    finally:
        run.stop_all()
        shutil.rmtree(clone, ignore_errors=True)
    print("README commands: all passed")


if __name__ == "__main__":
    main()
