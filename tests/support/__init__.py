"""The one helper package of the Python suites and scripts.

Every suite and script imports it as `tests.support` and is run as a module from the
repository root, with the system interpreter (kazoo is installed for it only):

    /usr/bin/python3 -m tests.interop.kazoo_suite --server rzk
    /usr/bin/python3 -m tests.differential.diff_test
    /usr/bin/python3 -m scripts.bench-compare --help

`-m` puts the current directory (the repository root) first on the import path, so nothing
here or in its users touches sys.path; `tests`, `tests.interop`, `tests.differential` and
`scripts` are plain packages (an `__init__.py` each) for the same reason.

Modules, one job each:
  servers  start Apache ZooKeeper 3.8 or rzk on a free loopback port (the one launcher)
  java     the Debian classpath (java-classpath.txt, shared with the Rust tests), javac, java
  net      a free port, and the TCP proxy that cuts connections for fault injection
  zkwire   the raw ZooKeeper wire client: jute encoding and decoding, framing
  stats    percentile and median
  floor    fdatasync and loopback round-trip latency, the floor under a durable handoff
  machine  /proc readings, the progress log and the wait for a quiet machine of the benchmarks
"""
