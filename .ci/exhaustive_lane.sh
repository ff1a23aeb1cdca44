#!/usr/bin/env bash
# CI lane: the model checker (issues 8, 15). Breadth-first over every reachable joint state
# of the reference model and the production targets (no --depth: the whole space) where
# that fits the budget, depth-bounded where it does not (counts and cuts: README,
# "Model checking"). Each step under `timeout`; about 3 minutes on 2 idle cores.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { printf '\n=== exhaustive lane: %s (%ss elapsed)\n' "$1" "$((SECONDS - started))"; }
PY=${PYTHON:-python}

step "production manager, LRU, capacities 1..2, every reachable state"
timeout 300 "$PY" -m kvoffload check-exhaustive --capacity 2 --policy lru --target impl --quiet

step "production manager, ARC, capacity 1, every reachable state"
timeout 300 "$PY" -m kvoffload check-exhaustive --capacity 1 --policy arc --target impl --quiet

step "production manager, both policies, capacities 1..3, every state within 4 calls"
timeout 600 "$PY" -m kvoffload check-exhaustive --depth 4 --capacity 3 --policy both --target impl --quiet

step "production policies alone, LRU capacities 1..2 and ARC capacity 1, every reachable state"
timeout 300 "$PY" -m kvoffload check-exhaustive --capacity 2 --policy lru --target impl --policies-only --quiet
timeout 300 "$PY" -m kvoffload check-exhaustive --capacity 1 --policy arc --target impl --policies-only --quiet

step "done"
