#!/usr/bin/env bash
# CI lane: the model checker (issues 8, 15, 17). Breadth-first over every reachable joint
# state of the reference model and the production targets (no --depth: the whole space)
# where that fits the budget, depth-bounded where it does not (counts and cuts: README,
# "Model checking"). --distinguished 0 makes every hash interchangeable (no I8 pair in the
# alphabet: a far smaller space); the I8 pairs are explored at capacities 1..2. Each step
# under `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { printf '\n=== exhaustive lane: %s (%ss elapsed)\n' "$1" "$((SECONDS - started))"; }
PY=${PYTHON:-python}
check() { timeout 600 "$PY" -m kvoffload check-exhaustive --quiet "$@"; }

step "production manager, LRU, capacities 1..3, every reachable state (hashes interchangeable)"
check --capacity 3 --policy lru --target impl --distinguished 0

step "production manager, ARC, capacities 1..2, every reachable state (hashes interchangeable)"
check --capacity 2 --policy arc --target impl --distinguished 0

step "production manager, I8 pairs (h0, its fingerprint twin h1, its prefix h2): LRU 1..2, ARC 1, every state"
check --capacity 2 --policy lru --target impl
check --capacity 1 --policy arc --target impl

step "production manager, ARC capacity 3 (complete in ~8 CPU-minutes: README), every state within 8 calls"
check --depth 8 --capacity 3 --policy arc --target impl --distinguished 0

step "production manager, LRU and ARC, capacities 1..3 with the I8 pairs, every state within 3 calls"
check --depth 3 --capacity 3 --policy both --target impl

step "S3-FIFO and SIEVE managers, capacities 1..2, every reachable state (hashes interchangeable)"
for policy in s3fifo sieve; do
  check --capacity 2 --policy "$policy" --target impl --distinguished 0
done

step "production policies alone: LRU 1..3, ARC 1..2, S3-FIFO 1..2, SIEVE 1..3, every reachable state"
check --capacity 3 --policy lru --target impl --policies-only --distinguished 0
check --capacity 2 --policy arc --target impl --policies-only --distinguished 0
check --capacity 2 --policy s3fifo --target impl --policies-only --distinguished 0
check --capacity 3 --policy sieve --target impl --policies-only --distinguished 0
check --capacity 2 --policy lru --target impl --policies-only

step "production ARC policy alone, capacities 1..3, every block idle and nothing protected (ARC's lists, ghosts and p), every reachable state"
check --capacity 3 --policy arc --target impl --policies-only --idle-only --distinguished 0

step "done"
