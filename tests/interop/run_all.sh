#!/usr/bin/env bash
# Runs each interop suite (kazoo, zkCli, Curator, C client, restart, rzk CLI, enforced auth, TLS, SASL,
# the web console in Chromium) on one server kind,
# then a summary.
#   tests/interop/run_all.sh [--server zookeeper|rzk]
# Each suite starts its own fresh server. Exits non-zero if any suite fails.
# Needs scripts/install-deps.sh to have run; for rzk, a built target/debug/rzk (or $RZK_BIN).
set -uo pipefail

server=zookeeper
while [ $# -gt 0 ]; do
    case "$1" in
        --server) server="${2:?--server needs a value}"; shift 2 ;;
        --server=*) server="${1#--server=}"; shift ;;
        -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
        *) echo "run_all.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$server" in
    zookeeper|rzk) ;;
    *) echo "run_all.sh: --server must be zookeeper or rzk" >&2; exit 2 ;;
esac

# A relative $RZK_BIN names a file from where we were called, not from the repository root.
if [ -n "${RZK_BIN:-}" ]; then export RZK_BIN="$(realpath -m -- "$RZK_BIN")"; fi
# The suites are modules of the package tree rooted at the repository (see tests/support).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# kazoo is installed for the system interpreter only; never use a pyenv/venv python here.
py=/usr/bin/python3

suites=(kazoo_suite.py zkcli_suite.py curator_suite.py cclient_suite.py restart_suite.py cli_suite.py enforced_auth_suite.py
        tls_suite.py sasl_suite.py console_suite.py)
declare -A status secs
failed=0
for s in "${suites[@]}"; do
    echo "=== $s --server $server"
    start=$(date +%s.%N)
    "$py" -m "tests.interop.${s%.py}" --server "$server"
    rc=$?
    end=$(date +%s.%N)
    status[$s]=$rc
    secs[$s]=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    [ "$rc" -eq 0 ] || failed=1
    echo
done

echo "=== interop summary (server: $server)"
for s in "${suites[@]}"; do
    if [ "${status[$s]}" -eq 0 ]; then r=PASS; else r="FAIL (exit ${status[$s]})"; fi
    printf '  %-18s %-14s %6ss\n' "$s" "$r" "${secs[$s]}"
done
if [ "$failed" -ne 0 ]; then
    echo "interop: FAILED"
    exit 1
fi
echo "interop: all suites passed"
