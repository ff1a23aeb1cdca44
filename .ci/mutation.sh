#!/usr/bin/env bash
# Mutation testing of the conformance suite (issue 14 item 3; docs/mutation-report.md).
# cosmic-ray (dev extra) mutates copies, made at run time, of vLLM 0.32's
# kv_offload/cpu/manager.py and policies/*.py (from the vLLM environment's install), of
# vLLM 0.33's (from the overlay, when KVOFFLOAD_VLLM033_SITE names it: .ci/vllm033_overlay.sh)
# and of our reference LRU/ARC policies; each mutant is judged by the conformance suite at
# its default settings. Usage:
#   bash .ci/mutation.sh          the report's runs (seeded samples; ~80 min on the shared
#                                 2-core machine), markdown in .mutation/TARGET.md
#   bash .ci/mutation.sh --ci     the bounded CI sample: the first mutants of the same
#                                 seeded draws; fails if one survives that is not a known
#                                 equivalent mutant (kvoffload/mutation/classified.py)
# KVOFFLOAD_VLLM_PYTHON: the python of vLLM's environment (default .venv-vllm/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
VLLM_PY=${KVOFFLOAD_VLLM_PYTHON:-.venv-vllm/bin/python}
if [ "${1:-}" = "--ci" ]; then
  # random.Random(0).sample(range(n), k) with k small draws a prefix of the k=60/k=30
  # draws of the report, so these mutants' verdicts are among the report's.
  timeout 240 "$PY" -m kvoffload mutation run --target reference-policies --sample "${REF_SAMPLE:-4}" --seed 0 --workdir .mutation/ci-reference-policies --check
  timeout 420 "$PY" -m kvoffload mutation run --target vllm-cpu --python "$VLLM_PY" --sample "${VLLM_SAMPLE:-5}" --seed 0 --workdir .mutation/ci-vllm-cpu --check
  if [ -n "${KVOFFLOAD_VLLM033_SITE:-}" ]; then
    PYTHONPATH="$KVOFFLOAD_VLLM033_SITE" VLLM_TARGET_DEVICE=cpu timeout 420 "$PY" -m kvoffload mutation run --target vllm033-cpu --python "$VLLM_PY" --sample "${VLLM033_SAMPLE:-4}" --seed 0 --workdir .mutation/ci-vllm033-cpu --check
  fi
else
  mkdir -p .mutation
  "$PY" -m kvoffload mutation run --target reference-policies --sample 30 --seed 0 --report .mutation/reference-policies.md
  "$PY" -m kvoffload mutation run --target vllm-cpu --python "$VLLM_PY" --sample 60 --seed 0 --report .mutation/vllm-cpu.md
  if [ -n "${KVOFFLOAD_VLLM033_SITE:-}" ]; then
    PYTHONPATH="$KVOFFLOAD_VLLM033_SITE" VLLM_TARGET_DEVICE=cpu "$PY" -m kvoffload mutation run --target vllm033-cpu --python "$VLLM_PY" --sample 40 --seed 7 --report .mutation/vllm033-cpu.md
  fi
fi
