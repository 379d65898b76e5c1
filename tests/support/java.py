"""Java processes with Debian's ZooKeeper 3.8 and Curator 5.4 jars: the classpath, compiling the
harnesses under tests/interop/java/, and the `java` command line.

The jars are listed once, in tests/support/java-classpath.txt, which the Rust tests read too.
"""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLASSPATH_FILE = os.path.join(HERE, "java-classpath.txt")
# The Java harnesses' sources, and where their classes go (git-ignored).
HARNESS_DIR = os.path.join(REPO, "tests", "interop", "java")
BUILD = os.path.join(HARNESS_DIR, "build")


class JavaError(Exception):
    """A jar is missing or javac failed; the message says which and how."""


def jars():
    """The jar paths of java-classpath.txt, in order."""
    with open(CLASSPATH_FILE) as f:
        lines = [ln.strip() for ln in f]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def classpath(*dirs):
    """`dirs` (class directories), then every jar, joined for `-cp`."""
    return ":".join(list(dirs) + jars())


def compile_harness(name, timeout_s, source_dir=HARNESS_DIR):
    """Compiles <source_dir>/<name>.java (tests/interop/java/ by default), and the classes of
    that directory it uses, into BUILD, when a source there is newer than the class."""
    for j in jars():
        if not os.path.exists(j):
            raise JavaError("missing jar %s (run scripts/install-deps.sh)" % j)
    src = os.path.join(source_dir, name + ".java")
    cls = os.path.join(BUILD, name + ".class")
    newest = max(os.path.getmtime(os.path.join(source_dir, f))
                 for f in os.listdir(source_dir) if f.endswith(".java"))
    if os.path.exists(cls) and os.path.getmtime(cls) >= newest:
        return
    os.makedirs(BUILD, exist_ok=True)
    p = subprocess.run(["javac", "-nowarn", "-d", BUILD, "-cp", classpath(), "-sourcepath",
                        source_dir, src],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout_s)
    if p.returncode != 0:
        raise JavaError("javac failed:\n" + p.stdout)


def command(main_class, args=(), heap=None, props=(), dirs=()):
    """`java [-Xmx<heap>] -D<k>=<v>... -cp <dirs + jars> <main_class> <args>`; `props` is a
    sequence of (name, value) pairs."""
    return (["java"] + (["-Xmx" + heap] if heap else [])
            + ["-D%s=%s" % kv for kv in props]
            + ["-cp", classpath(*dirs), main_class] + [str(a) for a in args])


def harness_command(main_class, args, heap, log_file):
    """A harness compiled by compile_harness, its slf4j-simple log (WARN and up) in `log_file`."""
    return command(main_class, args, heap,
                   [("org.slf4j.simpleLogger.defaultLogLevel", "warn"),
                    ("org.slf4j.simpleLogger.logFile", log_file)], [BUILD])
