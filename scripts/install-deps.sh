#!/usr/bin/env bash
# Installs what the interop suites (tests/interop) need on Debian 12, from Debian's own packages:
#   zookeeper               Apache ZooKeeper 3.8 jars + zkCli.sh (no service: that is zookeeperd,
#                           which we deliberately do not install)
#   libcurator-recipes-java Apache Curator 5.4 (pulls curator-client/-framework, guava, slf4j)
#   python3-kazoo           kazoo 2.8 for the system /usr/bin/python3
#   default-jdk-headless    javac, to compile tests/interop/java/CuratorSuite.java
#   zookeeper-bin           the ZooKeeper 3.8 C client's cli_mt and load_gen (pulls the C
#                           library, libzookeeper-mt2), for tests/interop/cclient_suite.py
#   prometheus              Prometheus 2.42, which tests/interop/prometheus_suite.py runs to
#                           scrape rzk's metrics endpoint
#   libservlet-api-java     the servlet API ZooKeeper's Jetty AdminServer needs, which the tests
#                           compare rzk's AdminServer with (zookeeper pulls it in via jetty9)
#   openssl                 the command that makes the TLS tests' certificates at run time
#   python3-pure-sasl       the SASL kazoo's sasl_options use (tests/interop/sasl_suite.py)
#   krb5-kdc, krb5-admin-server
#                           MIT Kerberos's KDC, kdb5_util and kadmin.local: the Kerberos tests'
#                           realm on loopback (rzk-testkit's kerberos.rs)
#   libkrb5-dev, libclang-dev
#                           the GSS-API headers and the libclang that build rzk's optional
#                           `gssapi` feature (its bindings are generated at build time)
#   systemd, groff-base, man-db
#                           systemd-analyze, which verifies contrib/systemd's units, and groff
#                           and man, which render the generated man pages
#                           (tests/packaging/suite.py)
#   chromium, chromium-driver, python3-selenium
#                           a real browser, headless, and the WebDriver that drives it, for the
#                           web console's suite (tests/interop/console_suite.py)
#   python3-matplotlib      the plotting library that draws docs/charts/ from a sweep
#                           (scripts/bench-curves.py); the gate draws a small one
# Idempotent: when every package is already installed it does not touch apt at all.
# Run as root (or as a user with sudo).
set -euo pipefail

PKGS=(zookeeper libcurator-recipes-java python3-kazoo default-jdk-headless zookeeper-bin
      libservlet-api-java)
PKGS+=(prometheus)
PKGS+=(libcurator-discovery-java) # curator-x-discovery 5.4 (pulls Jackson), discovery interop
PKGS+=(openssl)
PKGS+=(python3-pure-sasl krb5-kdc krb5-admin-server libkrb5-dev libclang-dev)
PKGS+=(systemd groff-base man-db)
PKGS+=(chromium chromium-driver python3-selenium)
PKGS+=(iproute2) # ss: the backlog of a listening socket, in the server-start tests
PKGS+=(python3-matplotlib)

installed() {
    # Read whole, not piped into `grep -q`: under pipefail, grep's early exit gives dpkg a
    # SIGPIPE on a long status and the package would count as missing.
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [ "$status" = "install ok installed" ]
}

missing=()
for p in "${PKGS[@]}"; do
    installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    SUDO=()
    if [ "$(id -u)" -ne 0 ]; then
        SUDO=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update
    "${SUDO[@]}" apt-get install -y --no-install-recommends "${PKGS[@]}"
else
    echo "install-deps: all packages already installed (${PKGS[*]})"
fi

# Verify that what the suites actually use is there: the jars are those of the one classpath.
mapfile -t jars < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' \
    "$(dirname "$0")/../tests/support/java-classpath.txt")
fail=0
for f in /usr/share/zookeeper/bin/zkCli.sh "${jars[@]}" \
         /usr/lib/zookeeper/bin/cli_mt /usr/lib/zookeeper/bin/load_gen; do
    if [ ! -e "$f" ]; then
        echo "install-deps: missing $f" >&2
        fail=1
    fi
done
for cmd in java javac stdbuf prometheus /usr/sbin/krb5kdc /usr/sbin/kdb5_util /usr/sbin/kadmin.local; do
    if ! command -v "$cmd" >/dev/null; then
        echo "install-deps: $cmd not on PATH" >&2
        fail=1
    fi
done
if ! /usr/bin/python3 -c 'import kazoo.client, puresasl, matplotlib' 2>/dev/null; then
    echo "install-deps: /usr/bin/python3 cannot import kazoo, puresasl and matplotlib" >&2
    fail=1
fi
exit "$fail"
