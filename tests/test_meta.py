"""Checks of the project itself: every clause is implemented and tested, the public API
type-checks for downstream code, and the package imports without torch or vLLM."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import kvoffload
from kvoffload.cli import main
from kvoffload.spec import contract_clauses

ROOT = Path(__file__).resolve().parents[1]
SPEC_DIR = ROOT / "kvoffload" / "spec"
CLAUSE_IDS = [clause.id for clause in contract_clauses()]
EXTENSIONS_HEADING = "\n# Extensions (kvoffload)\n"
EXTENSION_FAMILIES = "KNTFV"  # see that heading in CONTRACT.md


def _test_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                names.add(node.name)
    return names


def test_shipped_contract_matches_shared_copy() -> None:
    shared = ROOT.parent / "shared" / "CONTRACT.md"
    if not shared.exists():
        pytest.skip("no ../shared/CONTRACT.md beside this checkout")
    ours = (SPEC_DIR / "CONTRACT.md").read_text()
    base, marker, _extensions = ours.partition(EXTENSIONS_HEADING)
    assert marker, f"kvoffload/spec/CONTRACT.md lacks its {EXTENSIONS_HEADING!r} section"
    assert base.rstrip("\n") == shared.read_text().rstrip("\n"), (
        "kvoffload/spec/CONTRACT.md is out of sync with ../shared/CONTRACT.md: copy it over "
        "and keep our extensions below their heading"
    )


def test_contract_has_the_clause_families() -> None:
    families = {re.sub(r"\d+$", "", clause_id) for clause_id in CLAUSE_IDS}
    assert set("MCIBPLASHE") <= families <= set("MCIBPLASHE") | set(EXTENSION_FAMILIES)
    assert len(CLAUSE_IDS) == len(set(CLAUSE_IDS))


@pytest.mark.parametrize("clause_id", CLAUSE_IDS)
def test_every_clause_is_cited_in_spec(clause_id: str) -> None:
    pattern = re.compile(rf"\b{clause_id}(?![0-9])")
    sources = [path.read_text(encoding="utf-8") for path in SPEC_DIR.glob("*.py")]
    assert any(pattern.search(source) for source in sources), f"{clause_id} is not cited in kvoffload/spec/"


@pytest.mark.parametrize("clause_id", CLAUSE_IDS)
def test_every_clause_names_a_test(clause_id: str) -> None:
    pattern = re.compile(rf"^test_{clause_id}(_|$)")
    assert any(pattern.match(name) for name in _test_names()), f"no test is named test_{clause_id}_…"


def test_cli_version_and_contract_listing() -> None:
    runner = CliRunner()
    version = runner.invoke(main, ["--version"])
    assert version.exit_code == 0 and kvoffload.__version__ in version.output
    listing = runner.invoke(main, ["contract"])
    assert listing.exit_code == 0
    listed = [line.split()[1] for line in listing.output.splitlines() if line.strip()]
    assert sorted(listed) == sorted(CLAUSE_IDS)
    assert all(line.startswith("✓") for line in listing.output.splitlines() if line.strip())


def test_python_dash_m_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kvoffload", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "kvoffload" in done.stdout


def test_import_needs_neither_torch_nor_vllm() -> None:
    # A None entry in sys.modules makes any `import torch` raise ImportError.
    script = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None
        sys.modules["vllm"] = None
        import kvoffload
        m = kvoffload.ReferenceManager(num_blocks=2, enable_events=True)
        assert m.prepare_store([b"a" * 32]) is not None
        print(kvoffload.ReferenceManager.__name__)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ReferenceManager"


def test_mypy_strict_on_the_package() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_production_classes_are_reexported_lazily() -> None:
    script = textwrap.dedent(
        """
        import sys
        import kvoffload
        assert "numba" not in sys.modules, "import kvoffload must not load numba"
        import kvoffload.impl
        assert kvoffload.CPUOffloadingManager is kvoffload.impl.CPUOffloadingManager
        assert kvoffload.CPUOffloadingSpec is kvoffload.impl.CPUOffloadingSpec
        try:
            kvoffload.NoSuchThing
        except AttributeError:
            print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
