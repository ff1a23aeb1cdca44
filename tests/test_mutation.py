"""The mutation-testing harness (``kvoffload mutation``): copies keep every line, cosmic-ray's
mutants are selected reproducibly, annotation mutants are recognised as equivalent, and the
kill test — the default conformance suite — kills a real mutant. The full runs and their
figures are in docs/mutation-report.md (the vLLM target runs in the vLLM lane)."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cosmic_ray")

from cosmic_ray.mutating import apply_mutation  # noqa: E402
from cosmic_ray.plugins import get_operator  # noqa: E402
from cosmic_ray.work_db import WorkDB, use_db  # noqa: E402

from kvoffload.mutation.judge import judge  # noqa: E402
from kvoffload.mutation.scratch import build_scratch, source_dir  # noqa: E402
from kvoffload.mutation.session import (  # noqa: E402
    SKIP_EQUIVALENT,
    SKIP_NOT_SAMPLED,
    SKIP_OUT_OF_SCOPE,
    select,
    sessions_of,
)
from kvoffload.mutation.static import in_unevaluated_annotation  # noqa: E402
from kvoffload.mutation.targets import REFERENCE_POLICIES, mutant_key  # noqa: E402


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    root = build_scratch(REFERENCE_POLICIES, source_dir(REFERENCE_POLICIES, sys.executable), tmp_path)
    sys.path.insert(0, str(root))
    yield tmp_path
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m.startswith(REFERENCE_POLICIES.package)]:
        del sys.modules[name]


def test_mutation_scratch_copy_keeps_every_line(scratch: Path) -> None:
    original = (source_dir(REFERENCE_POLICIES, sys.executable) / "lru.py").read_text().splitlines()
    copy = (scratch / "src" / "kvo_mut_spec" / "lru.py").read_text().splitlines()
    assert len(copy) == len(original)
    assert "from kvoffload.spec.errors import ContractViolation" in copy
    assert not [line for line in copy if line.startswith("from .")]


def test_mutation_annotations_of_postponed_modules_are_static_equivalents(scratch: Path) -> None:
    copy = scratch / "src" / "kvo_mut_spec" / "lru.py"
    lines = copy.read_text().splitlines()
    get_line = next(i for i, line in enumerate(lines, 1) if "def get(" in line)
    assert in_unevaluated_annotation(copy, (get_line, lines[get_line - 1].index("| None")))
    body_line = next(i for i, line in enumerate(lines, 1) if "block.ref_cnt == 0 and" in line)
    assert not in_unevaluated_annotation(copy, (body_line, lines[body_line - 1].index("==")))
    plain = scratch / "plain.py"
    plain.write_text("def f(x: int | None) -> int | None:\n    return x\n")
    assert not in_unevaluated_annotation(plain, (1, 13))  # evaluated at definition time


def test_mutation_default_suite_kills_a_cosmic_ray_mutant(scratch: Path) -> None:
    copy = scratch / "src" / "kvo_mut_spec" / "lru.py"
    lines = copy.read_text().splitlines()
    eligible = next(i for i, line in enumerate(lines, 1) if "block.ref_cnt == 0 and" in line)
    operator = get_operator("core/ReplaceComparisonOperator_Eq_NotEq")()
    occurrence = 0
    while True:  # the occurrence of `==` on the eligibility line of evict (P5, L3)
        _, mutated = apply_mutation(copy, operator, occurrence)
        assert mutated is not None, "no `==` on the eligibility line"
        if "block.ref_cnt != 0 and" in mutated.splitlines()[eligible - 1]:
            break
        copy.write_text("\n".join(lines) + "\n")
        occurrence += 1
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        verdict = judge(REFERENCE_POLICIES.name, "lru.py")
    assert verdict == 1, printed.getvalue()
    assert printed.getvalue().startswith("VIOLATES ")


def test_mutation_selection_is_scoped_and_seeded(scratch: Path) -> None:
    sessions = sessions_of(REFERENCE_POLICIES, scratch)
    for session in sessions:  # cosmic-ray finds the mutants once; each round selects on a fresh copy
        session.config.write_text(
            f'[cosmic-ray]\nmodule-path = "{scratch / "src" / "kvo_mut_spec" / session.file}"\n'
            'timeout = 10.0\nexcluded-modules = []\ntest-command = "false"\n\n'
            '[cosmic-ray.distributor]\nname = "local"\n'
        )
        subprocess.run([sys.executable, "-m", "cosmic_ray.cli", "init", str(session.config),
                        str(session.database.with_suffix(".init"))], check=True)
    chosen: list[set[str]] = []
    for _ in range(2):
        for session in sessions:
            shutil.copyfile(session.database.with_suffix(".init"), session.database)
        in_scope, selected = select(REFERENCE_POLICIES, scratch, sessions, sample=7, seed=3)
        assert selected == 7 and in_scope > 7
        pending: set[str] = set()
        reasons: set[str] = set()
        for session in sessions:
            with use_db(str(session.database), WorkDB.Mode.open) as database:
                pending |= {f"{session.file}:{item.mutations[0].start_pos}{item.mutations[0].operator_name}"
                            f"#{item.mutations[0].occurrence}" for item in database.pending_work_items}
                reasons |= {result.output.split(":")[0] for _, result in database.results}
        assert len(pending) == 7
        assert reasons == {SKIP_OUT_OF_SCOPE.split(":")[0], SKIP_EQUIVALENT.split(":")[0], SKIP_NOT_SAMPLED}
        chosen.append(pending)
    assert chosen[0] == chosen[1]


def _pending_keys(sessions: list[Any]) -> set[str]:
    """The report's keys (``mutant_key``) of the mutants a selection left to run."""
    keys: set[str] = set()
    for session in sessions:
        with use_db(str(session.database), WorkDB.Mode.open) as database:
            keys |= {mutant_key(REFERENCE_POLICIES.name, session.file, item.mutations[0])
                     for item in database.pending_work_items}
    return keys


def test_mutation_only_selects_the_named_mutants(scratch: Path) -> None:
    sessions = sessions_of(REFERENCE_POLICIES, scratch)
    for session in sessions:
        session.config.write_text(
            f'[cosmic-ray]\nmodule-path = "{scratch / "src" / "kvo_mut_spec" / session.file}"\n'
            'timeout = 10.0\nexcluded-modules = []\ntest-command = "false"\n\n'
            '[cosmic-ray.distributor]\nname = "local"\n'
        )
        subprocess.run([sys.executable, "-m", "cosmic_ray.cli", "init", str(session.config),
                        str(session.database.with_suffix(".init"))], check=True)

    def fresh() -> None:
        for session in sessions:
            shutil.copyfile(session.database.with_suffix(".init"), session.database)

    fresh()
    select(REFERENCE_POLICIES, scratch, sessions, sample=2, seed=5)
    wanted = _pending_keys(sessions)
    assert len(wanted) == 2
    fresh()
    with pytest.raises(ValueError, match="no in-scope mutant"):
        select(REFERENCE_POLICIES, scratch, sessions, sample=0, seed=0,
               only=frozenset({"reference-policies|lru.py|1:1|core/Nothing#0"}))
    fresh()
    _, selected = select(REFERENCE_POLICIES, scratch, sessions, sample=7, seed=0, only=frozenset(wanted))
    assert selected == 2 and _pending_keys(sessions) == wanted
