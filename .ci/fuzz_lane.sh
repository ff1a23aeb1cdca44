#!/usr/bin/env bash
# Bounded fuzz lane: each target fuzzed in lockstep with the reference model for
# FUZZ_MINUTES (default 1) minutes. Fails (exit 1) when any target reports a
# violation; the shrunk reproduction is in the log. The example database lives in a
# temporary directory (it does not survive the runner): turn any finding into a
# regression test under tests/ (see kvoffload/conformance/drivers/fuzz.py).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${FUZZ_MINUTES:-1}"
DB="$(mktemp -d)"
trap 'rm -rf "$DB"' EXIT
# Each target runs alone for its minutes (one core each): as many at a time as there are cores.
for target in "manager --policy lru" "manager --policy arc" "manager --policy s3fifo" "manager --policy sieve" \
        backend policy; do
    echo "python -m kvoffload fuzz $target --minutes $MINUTES --database $DB --quiet"
done | bash .ci/in_parallel.sh
echo "fuzz lane: nothing found"
