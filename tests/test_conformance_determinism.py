"""A conformance run at a seed draws the same calls whatever else the caller imported
(``runner.seed_only_draws``): hypothesis would otherwise mix literals of every loaded
non-library module into its draws, so a reproduction by seed would not reproduce."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from kvoffload.conformance import check_policy
from kvoffload.impl import factories


def _run() -> tuple[int, int, tuple[str, ...]]:
    result = check_policy(factories.arc_policy, policy="arc", max_examples=30)
    assert result.ok, result.summary()
    return result.steps, result.examples, result.clauses_exercised


def test_same_seed_same_calls_after_importing_a_module_full_of_new_constants(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _run()
    name = "kvoffload_probe_constants_module"
    literals = ", ".join(str(5 + 11 * i) for i in range(600))
    (tmp_path / f"{name}.py").write_text(f"VALUES = [{literals}]\nBLOBS = [{', '.join(repr(bytes([i]) * 7) for i in range(200))}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    importlib.import_module(name)
    assert _run() == before
