#!/usr/bin/env bash
# CI lane: bounded exhaustive checking (issue 8). Every protocol-keeping call sequence up
# to the bound, lockstep with the reference model: the production manager (LRU and ARC,
# capacities 1..3 at depth 3) and the production policies alone (capacity 1 at depth 4). A few minutes on 2 cores; each step under `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { printf '\n=== exhaustive lane: %s (%ss elapsed)\n' "$1" "$((SECONDS - started))"; }
PY=${PYTHON:-python}

step "production manager, both policies, capacities 1..3, depth 3"
timeout 600 "$PY" -m kvoffload check-exhaustive --depth 3 --capacity 3 --policy both --target impl --quiet

step "production policies alone, both policies, capacity 1, depth 4"
timeout 600 "$PY" -m kvoffload check-exhaustive --depth 4 --capacity 1 --policy both --target impl --policies-only --quiet

step "done"
