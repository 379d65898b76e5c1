#!/usr/bin/python3
"""Interop suite with the real Apache Curator 5.4 (Debian libcurator-*-java) Java client.

    /usr/bin/python3 tests/interop/curator_suite.py [--server zookeeper|rzk]

Starts the server, compiles tests/interop/java/CuratorSuite.java with javac into
tests/interop/java/build/ (when the source is newer than the class), runs it against the server
and fails unless the Java program reports every test passed. The client-side log (slf4j-simple,
WARN and up) goes to a file that is printed when something fails.
"""

import os
import subprocess

from common import HERE, Suite, Failure, check

JAVA_DIR = os.path.join(HERE, "java")
BUILD = os.path.join(JAVA_DIR, "build")
SRC = os.path.join(JAVA_DIR, "CuratorSuite.java")
CLASS = os.path.join(BUILD, "CuratorSuite.class")
JARS = ["curator-client", "curator-framework", "curator-recipes", "zookeeper", "zookeeper-jute",
        "guava", "slf4j-api", "slf4j-simple"]
CLASSPATH = ":".join("/usr/share/java/%s.jar" % j for j in JARS)
EXPECTED_TESTS = 5

suite = Suite("curator", overall_timeout_s=150)


def compile_if_needed():
    for j in CLASSPATH.split(":"):
        check(os.path.exists(j), "missing jar %s (run scripts/install-deps.sh)", j)
    if os.path.exists(CLASS) and os.path.getmtime(CLASS) >= os.path.getmtime(SRC):
        return
    os.makedirs(BUILD, exist_ok=True)
    p = subprocess.run(["javac", "-nowarn", "-d", BUILD, "-cp", CLASSPATH, SRC],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if p.returncode != 0:
        raise Failure("javac failed:\n" + p.stdout)


@suite.test
def curator_java(srv):
    compile_if_needed()
    log = os.path.join(BUILD, "curator-client.log")
    if os.path.exists(log):
        os.remove(log)
    cmd = ["java", "-Xmx256m",
           "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
           "-Dorg.slf4j.simpleLogger.logFile=" + log,
           "-cp", BUILD + ":" + CLASSPATH, "CuratorSuite", srv.hosts]
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
