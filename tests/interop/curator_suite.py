"""Interop suite with the real Apache Curator 5.4 (Debian libcurator-*-java) Java client.

    /usr/bin/python3 -m tests.interop.curator_suite [--server zookeeper|rzk]

Starts the server, compiles tests/interop/java/CuratorSuite.java with javac into
tests/interop/java/build/ (when the source is newer than the class), runs it against the server
and fails unless the Java program reports every test passed. The client-side log (slf4j-simple,
WARN and up) goes to a file that is printed when something fails.
"""

import os
import subprocess

from tests.interop.common import Suite, Failure
from tests.support import java

EXPECTED_TESTS = 5

suite = Suite("curator", overall_timeout_s=150)


@suite.test
def curator_java(srv):
    try:
        java.compile_harness("CuratorSuite", 120)
    except java.JavaError as e:
        raise Failure(str(e))
    log = os.path.join(java.BUILD, "curator-client.log")
    if os.path.exists(log):
        os.remove(log)
    cmd = java.harness_command("CuratorSuite", [srv.hosts], "256m", log)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        raise Failure("CuratorSuite JVM did not finish within 120s")
    for line in p.stdout.splitlines():
        print("    " + line)
    summary = "curator: %d tests, 0 failed" % EXPECTED_TESTS
    if p.returncode != 0 or summary not in p.stdout:
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                tail = f.readlines()[-60:]
            print("    ---- client log tail (%s) ----" % log)
            for line in tail:
                print("    " + line.rstrip("\n"))
        raise Failure("CuratorSuite exited with status %d%s" % (
            p.returncode, "" if summary in p.stdout else " without reporting '%s'" % summary))


if __name__ == "__main__":
    suite.main()
