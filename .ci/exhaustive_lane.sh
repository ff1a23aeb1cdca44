#!/usr/bin/env bash
# CI lane: the model checker (issues 8, 15, 17). Breadth-first over every reachable joint
# state of the reference model and the production targets (no --depth: the whole space)
# where that fits the budget (<= 60 s a step on 2 cores), depth-bounded where it does not
# (counts and cuts: README, "Model checking"). Hashes: every one interchangeable (the default,
# --distinguished 0; they all share a 16-byte head, so a prefix-keyed target confuses every
# pair), or with the prefix hash h0 (that head alone: I8's prefix case) kept apart
# (--distinguished 1). Colliding fingerprints: impl.factories' colliding_* managers.
# Each step under `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { printf '\n=== exhaustive lane: %s (%ss elapsed)\n' "$1" "$((SECONDS - started))"; }
PY=${PYTHON:-python}
check() { timeout 600 "$PY" -m kvoffload check-exhaustive --quiet "$@"; }
COLLIDING=kvoffload.impl.factories:colliding

step "production manager, LRU 1..3 and ARC 1..2, every reachable state (hashes interchangeable)"
check --capacity 3 --policy lru --target impl
check --capacity 2 --policy arc --target impl

step "production manager with the prefix hash h0 (I8): LRU 1..3, ARC 1..2, every reachable state"
check --capacity 3 --policy lru --target impl --distinguished 1
check --capacity 2 --policy arc --target impl --distinguished 1

step "production manager, every fingerprint colliding (I8), with h0: LRU 1..3, ARC 1..2, every reachable state"
check --capacity 3 --policy lru --target "${COLLIDING}_lru_manager" --distinguished 1
check --capacity 2 --policy arc --target "${COLLIDING}_arc_manager" --distinguished 1

step "production manager, ARC 1..3, every reachable state: the literal command of issue 15 (about a minute: README, 'Where it is cut')"
check --capacity 3 --policy arc --target impl

step "production manager, LRU and ARC, capacities 1..3 with h0, every state within 5 calls"
check --depth 5 --capacity 3 --policy both --target impl --distinguished 1

step "S3-FIFO and SIEVE managers, capacities 1..2, every reachable state (hashes interchangeable)"
for policy in s3fifo sieve; do
  check --capacity 2 --policy "$policy" --target impl
done

step "production policies alone: LRU 1..3, ARC 1..3, S3-FIFO 1..2, SIEVE 1..3, every reachable state"
check --capacity 3 --policy lru --target impl --policies-only
check --capacity 3 --policy arc --target impl --policies-only
check --capacity 2 --policy s3fifo --target impl --policies-only
check --capacity 3 --policy sieve --target impl --policies-only
check --capacity 3 --policy lru --target impl --policies-only --distinguished 1

step "production ARC policy alone, capacities 1..3, every block idle and nothing protected (ARC's lists, ghosts and p), every reachable state"
check --capacity 3 --policy arc --target impl --policies-only --idle-only

step "done"
