"""Issue 19: the typed API as a user imports it.

``examples/typed_user`` is a user's package; it must pass ``mypy --strict`` against the
*installed* kvoffload (the README's editable install here; ``.ci/typing_lane.sh`` repeats
this after a wheel install), and so must the README's quick-start example as written.
mypy runs from the example's own directory, so the source tree is not on its path: only
an install that type checkers can see passes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "typed_user"


def _mypy(cwd: Path, cache: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)


def _quick_start_python() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README's Quick start has no python example"
    return match.group(1)


def test_user_package_passes_mypy_strict_against_the_install(tmp_path: Path) -> None:
    done = _mypy(EXAMPLE, tmp_path / "cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues found in 4 source files" in done.stdout


def test_readme_quick_start_type_checks_as_written(tmp_path: Path) -> None:
    (tmp_path / "quick_start.py").write_text(_quick_start_python(), encoding="utf-8")
    done = _mypy(tmp_path, tmp_path / "cache", "--strict", "quick_start.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_type_error_in_user_code_is_reported(tmp_path: Path) -> None:
    """The control: mypy really sees kvoffload's types (a wrong call is an error)."""
    (tmp_path / "wrong.py").write_text(
        "import kvoffload\n"
        "m = kvoffload.ReferenceManager(num_blocks=2)\n"
        "m.lookup('not a list of bytes')\n",
        encoding="utf-8",
    )
    done = _mypy(tmp_path, tmp_path / "cache", "--strict", "wrong.py")
    assert done.returncode == 1
    assert 'Argument 1 to "lookup" of "ReferenceManager" has incompatible type "str"' in done.stdout


def test_user_package_runs_with_the_answers_worked_out_by_hand() -> None:
    sys.path.insert(0, str(EXAMPLE))
    try:
        from typed_user import conformance, copying, managers
    finally:
        sys.path.remove(str(EXAMPLE))
    # four 32-byte hashes 00…, 01…, 02…, 03… stored in a cache of 8: all resident.
    assert managers.production_round_trip() == [bytes([i]) * 32 for i in range(4)]
    # BlockStatus(7) is a fresh block: ref_cnt -1 (pending); completing a load of an
    # absent hash breaks M3.
    assert managers.reference_violation() == "False M3"
    assert conformance.conforms()
    pytest.importorskip("torch")
    assert copying.store_two_blocks() == [(1, True)]
