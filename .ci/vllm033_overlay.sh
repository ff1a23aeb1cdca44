#!/usr/bin/env bash
# vLLM 0.33's pure-Python modules over the vLLM lane's 0.32 environment: .ci/vllm_overlay.sh 0.33.
# Usage: bash .ci/vllm033_overlay.sh [PYTHON]
exec bash "$(dirname "$0")/vllm_overlay.sh" 0.33 "$@"
