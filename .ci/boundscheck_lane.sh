#!/usr/bin/env bash
# The compiled paths under NUMBA_BOUNDSCHECK=1, in a fresh NUMBA_CACHE_DIR (a warm cache
# would silently drop the flag: numba's cache key ignores it). A canary proves the flag
# took effect: an out-of-bounds read in a small compiled function must raise IndexError,
# otherwise the lane fails. Then the lockstep and hostile-input tests run under it.
set -euo pipefail
cd "$(dirname "$0")/.."
NUMBA_CACHE_DIR="$(mktemp -d)"
# eager: every call runs compiled code (kvoffload.impl.core.runtime), never the
# plain-Python twin that answers while the core compiles in the background.
KVOFFLOAD_COMPILE=eager
export NUMBA_CACHE_DIR NUMBA_BOUNDSCHECK=1 KVOFFLOAD_COMPILE
trap 'rm -rf "$NUMBA_CACHE_DIR"' EXIT
python - <<'PY'
import numpy as np
from numba import njit

@njit(cache=False)  # a script on stdin has no cache locator; the lane needs none
def canary(a, i):
    return a[i]

try:
    canary(np.zeros(3), 5)
except IndexError:
    print("boundscheck canary: IndexError raised, NUMBA_BOUNDSCHECK is on")
else:
    raise SystemExit("boundscheck canary: an out-of-bounds read did not raise; the lane would prove nothing")
PY
python -m pytest -q -p no:cacheprovider tests/test_impl_lockstep.py tests/test_impl_ranks.py tests/test_impl_s3fifo_sieve.py tests/test_hostile_*.py tests/test_replay.py "$@"
