#!/usr/bin/env bash
# Bounded fuzz lane: each target fuzzed in lockstep with the reference model for
# FUZZ_MINUTES (default 1) minutes. Fails (exit 1) as soon as any target reports a
# violation; the shrunk reproduction is in the log. The example database lives in a
# temporary directory (it does not survive the runner): turn any finding into a
# regression test under tests/ (see kvoffload/conformance/drivers/fuzz.py).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${FUZZ_MINUTES:-1}"
DB="$(mktemp -d)"
trap 'rm -rf "$DB"' EXIT
FUZZ=(python -m kvoffload fuzz)
run() {
    echo "== kvoffload fuzz $* --minutes $MINUTES"
    "${FUZZ[@]}" "$@" --minutes "$MINUTES" --database "$DB" --quiet
}
run manager --policy lru
run manager --policy arc
run manager --policy s3fifo
run manager --policy sieve
run backend
run policy
echo "fuzz lane: nothing found"
