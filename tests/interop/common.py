"""Small shared harness for the interop suites: argument parsing, a test registry, a runner that
reports every failure, bounded waits, and a watchdog so a hung server can never hang a suite.

Each suite does:

    from tests.interop.common import Suite
    suite = Suite("kazoo")

    @suite.test
    def crud(srv): ...

    suite.main()          # parses --server, starts it, runs every test, exits non-zero on failure
"""

import argparse
import os
import subprocess
import sys
import threading
import time
import traceback

from tests.support import java, servers


class Failure(AssertionError):
    pass


def check(cond, msg, *args):
    """Like assert, but never compiled out and always with a message."""
    if not cond:
        raise Failure(msg % args if args else msg)


def check_eq(got, want, what):
    if got != want:
        raise Failure("%s: got %r, want %r" % (what, got, want))


def wait_until(pred, timeout_s, what, interval_s=0.02):
    """Polls `pred` until it returns a truthy value (which is returned) or fails after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise Failure("timed out after %.1fs waiting for %s" % (timeout_s, what))
        time.sleep(interval_s)


def expect_raises(exc_type, fn, *args, **kw):
    """Calls fn and fails unless it raises exc_type (exactly that class or a subclass)."""
    try:
        r = fn(*args, **kw)
    except exc_type as e:
        return e
    except Exception as e:  # wrong error
        raise Failure("%s%r raised %s(%s), want %s" % (
            getattr(fn, "__name__", fn), args, type(e).__name__, e, exc_type.__name__))
    raise Failure("%s%r returned %r, want %s raised" % (
        getattr(fn, "__name__", fn), args, r, exc_type.__name__))


def java_report(main_class, args, timeout_s):
    """Compiles and runs the harness tests/interop/java/<main_class>.java with `args`, echoes
    what it printed, fails unless it exits 0, and returns its `key: value` lines as a dict."""
    try:
        java.compile_harness(main_class, 120)
    except java.JavaError as e:
        raise Failure(str(e))
    log = os.path.join(java.BUILD, main_class + ".log")
    cmd = java.harness_command(main_class, args, "128m", log)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout_s)
    for line in p.stdout.splitlines():
        print("    " + line)
    check_eq(p.returncode, 0, main_class + "'s exit status")
    return dict(line.split(": ", 1) for line in p.stdout.splitlines() if ": " in line)


class Suite:
    def __init__(self, name, overall_timeout_s=120, server_options=None):
        self.server_options = server_options or {}
        self.name = name
        self.tests = []
        self.overall_timeout_s = overall_timeout_s
        self.server = None

    def test(self, fn):
        self.tests.append(fn)
        return fn

    def include(self, fns):
        """Registers tests defined in another module, to run next in the order given."""
        self.tests.extend(fns)

    def _watchdog(self):
        sys.stdout.write("\n%s: WATCHDOG: suite exceeded %ds, killing server and exiting\n"
                         % (self.name, self.overall_timeout_s))
        sys.stdout.flush()
        try:
            if self.server is not None:
                self.server.stop()
        finally:
            os._exit(3)

    def _print_server_log_tail(self, n=40):
        try:
            with open(os.path.join(self.server.workdir, "server.log"), errors="replace") as f:
                lines = f.readlines()[-n:]
        except OSError:
            return
        if lines:
            print("---- last %d lines of the %s server log ----" % (len(lines), self.server.kind))
            sys.stdout.write("".join(lines))
            print("---- end of server log ----")

    def parse_args(self, argv=None):
        p = argparse.ArgumentParser(description="%s interop suite" % self.name)
        p.add_argument("--server", choices=["zookeeper", "rzk"], default="zookeeper")
        p.add_argument("-k", dest="only", default=None,
                       help="run only tests whose name contains this substring")
        return p.parse_args(argv)

    def main(self, argv=None):
        args = self.parse_args(argv)
        dog = threading.Timer(self.overall_timeout_s, self._watchdog)
        dog.daemon = True
        dog.start()
        t0 = time.monotonic()
        failures = []
        ran = 0
        self.server = servers.start(args.server, **self.server_options)
        try:
            print("%s suite against %s on %s" % (self.name, args.server, self.server.hosts))
            for fn in self.tests:
                if args.only and args.only not in fn.__name__:
                    continue
                ran += 1
                t1 = time.monotonic()
                try:
                    fn(self.server)
                except Exception as e:
                    failures.append(fn.__name__)
                    print("FAIL %-34s %6.2fs  %s: %s" % (fn.__name__, time.monotonic() - t1,
                                                         type(e).__name__, e))
                    if not isinstance(e, Failure):
                        traceback.print_exc(file=sys.stdout)
                else:
                    print("ok   %-34s %6.2fs" % (fn.__name__, time.monotonic() - t1))
                sys.stdout.flush()
            if self.server.proc.poll() is not None:
                failures.append("server-alive")
                print("FAIL server exited during the suite with status %s" % self.server.proc.returncode)
        finally:
            if failures:
                self._print_server_log_tail()
            self.server.stop()
            dog.cancel()
        if ran == 0:
            failures.append("no-tests-ran")
        print("%s: %d tests, %d failed, %.1fs%s" % (
            self.name, ran, len(failures), time.monotonic() - t0,
            (": " + ", ".join(failures)) if failures else ""))
        sys.stdout.flush()
        # Non-daemon client threads must not keep a failed run alive.
        os._exit(1 if failures else 0)
