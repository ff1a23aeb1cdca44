"""Checks of the project itself: every clause is implemented and tested, the public API
type-checks for downstream code, and the package imports without torch or vLLM."""

from __future__ import annotations

import ast
import hashlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import kvoffload
from kvoffload.cli import main
from kvoffload.clause_sites import MarkerError, clause_sites, marker_sites
from kvoffload.spec import contract_clauses
from kvoffload.spec.clauses import implements

ROOT = Path(__file__).resolve().parents[1]
SPEC_DIR = ROOT / "kvoffload" / "spec"
CLAUSE_IDS = [clause.id for clause in contract_clauses()]
EXTENSIONS_HEADING = "\n# Extensions (kvoffload)\n"
EXTENSION_FAMILIES = "KNTFV"  # see that heading in CONTRACT.md
#: sha256 of the shared contract (everything above EXTENSIONS_HEADING, trailing newlines
#: stripped), so the prefix is checked verbatim also where no shared copy is beside the
#: checkout (CI). When the shared contract changes, copy it over and update this digest.
SHARED_PREFIX_SHA256 = "56708396c04ccf5ad444d3475b1bc9f5e47402571a1dff0d83c995ccae4ebd4c"


def _test_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                names.add(node.name)
    return names


def _shared_prefix() -> str:
    ours = (SPEC_DIR / "CONTRACT.md").read_text(encoding="utf-8")
    base, marker, _extensions = ours.partition(EXTENSIONS_HEADING)
    assert marker, f"kvoffload/spec/CONTRACT.md lacks its {EXTENSIONS_HEADING!r} section"
    return base.rstrip("\n")


def test_shipped_contract_keeps_the_shared_prefix_verbatim() -> None:
    digest = hashlib.sha256(_shared_prefix().encode("utf-8")).hexdigest()
    assert digest == SHARED_PREFIX_SHA256, (
        "the part of kvoffload/spec/CONTRACT.md above our extensions changed: it is the shared "
        "contract, word for word (add clauses below the extensions heading instead)"
    )


def test_shipped_contract_matches_shared_copy() -> None:
    shared = next((d / "shared" / "CONTRACT.md" for d in ROOT.parents if (d / "shared" / "CONTRACT.md").exists()), None)
    if shared is None:
        pytest.skip("no shared/CONTRACT.md above this checkout (the digest test still runs)")
    assert _shared_prefix() == shared.read_text(encoding="utf-8").rstrip("\n"), (
        f"kvoffload/spec/CONTRACT.md is out of sync with {shared}: copy it over "
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


def test_every_clause_maps_to_marked_code() -> None:
    sites = clause_sites()
    unmapped = [clause_id for clause_id in CLAUSE_IDS if clause_id not in sites]
    assert not unmapped, f"no @implements(...) marker names {unmapped}"


def test_every_marker_is_read_by_the_map() -> None:
    """Each ``@implements`` line of the package is one site of the map (a marker used any
    other way, e.g. called on a function after its definition, would be missed)."""
    package = ROOT / "kvoffload"
    per_file: dict[str, int] = {}
    for site in marker_sites():
        per_file[site.path] = per_file.get(site.path, 0) + 1
    for path in package.rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative in ("kvoffload/spec/clauses.py", "kvoffload/clause_sites.py"):
            continue  # the decorator's definition and the map's reader
        source = path.read_text(encoding="utf-8")
        decorators = len(re.findall(r"^\s*@implements\(", source, flags=re.M))
        called = re.findall(r"(?<![@\w.])implements\(", source)
        assert not called and decorators == per_file.get(relative, 0), relative


def test_a_marker_naming_no_clause_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not clauses of the contract"):
        implements("B9")
    with pytest.raises(ValueError, match="no clause id"):
        implements()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "bad.py").write_text('@implements("A1", "X7")\ndef f():\n    pass\n')
    with pytest.raises(MarkerError, match=r"bad.py:2 f: implements names no clause \['X7'\]"):
        marker_sites(package)
    (package / "bad.py").write_text('NAME = "B1"\n@implements(NAME)\ndef f():\n    pass\n')
    with pytest.raises(MarkerError, match="string literals"):
        marker_sites(package)


EXACT_SITES = {
    # backend clauses, not ARC's ghost lists of the same names
    "B1": {"spec/backend.py ReferenceCPUBackend.get_num_free_blocks", "spec/backend.py ReferenceCPUBackend.check_invariants"},
    "B2": {"spec/backend.py ReferenceCPUBackend.allocate_blocks"},
    # the tier clause, not ARC's list T1
    "T1": {"spec/tiers.py ReferenceTier.lookup", "spec/tiers.py ReferenceTier.damage", "spec/tiers.py ReferenceTier.load"},
    "A5": {"spec/arc.py ReferenceARCPolicy.evict"},
    "M7": {"spec/manager.py ReferenceManager.complete_store"},
    "K1": {"spec/keyed.py expected_lookup", "impl/vllm/manager.py KVOffloadingManager.lookup"},
    "N1": {"impl/vllm/reset_fence.py ResetFence", "impl/vllm/manager.py KVOffloadingManager.reset_cache",
           "impl/vllm/manager.py KVOffloadingManager.on_reset_flushed"},
}


@pytest.mark.parametrize("clause_id", sorted(EXACT_SITES))
def test_where_map_is_exact_for_known_clauses(clause_id: str) -> None:
    found = {f"{site.path.removeprefix('kvoffload/')} {site.qualname}" for site in clause_sites()[clause_id]}
    assert found == EXACT_SITES[clause_id]


def test_cli_contract_where_prints_the_marked_code() -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["contract", "--where", "B1", "T2"])
    assert listing.exit_code == 0, listing.output
    lines = listing.output.splitlines()
    assert [line.split()[1] for line in lines if line.startswith("✓")] == ["B1", "T2"]
    where = [line.split() for line in lines if line.startswith("       ")]
    sites = clause_sites()
    expected = [[f"{s.path}:{s.line}", s.qualname] for s in sites["B1"] + sites["T2"]]
    assert where == expected
    assert all("arc.py" not in line for line in lines)
    unknown = runner.invoke(main, ["contract", "Z1"])
    assert unknown.exit_code == 2 and "Z1" in unknown.output


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
