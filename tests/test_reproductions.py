"""A printed reproduction is a regression test a user can paste (issue 14, item 5).

For planted bugs of every target kind (tests/planted_bugs.py), the snippet a default run
prints (shrunk, importing the target as the CLI names it) is executed as text twice:

- as printed: it must fail with an ``AssertionError`` whose message starts with the
  clause the report names first;
- with its import line pointed at the FIXED target (the correct implementation, the
  reference model under the planted bug's name), as a user does once the bug is fixed:
  it must run clean, so the pasted test turns green.
"""

from __future__ import annotations

import pytest

import planted_bugs as pb
from kvoffload.conformance import run_conformance

#: (planted bug, kind, --policy, --strict, the fixed target "module:name")
CASES = [
    ("NoStoredEvent", "manager", "any", False, "kvoffload.spec:ReferenceManager"),
    ("FailedStoreAnnounced", "manager", "any", False, "kvoffload.spec:ReferenceManager"),
    ("CompleteLoadUnchecked", "manager", "any", True, "kvoffload.spec:ReferenceManager"),
    ("manager_evicts_pending", "manager", "any", False, "kvoffload.conformance.factories:reference_lru_manager"),
    ("ReversedSpecBackend", "backend", "any", False, "kvoffload.spec:ReferenceCPUBackend"),
    ("DoubleFreeBackend", "backend", "any", True, "kvoffload.spec:ReferenceCPUBackend"),
    ("LRUInsertOverwrites", "policy", "any", True, "kvoffload.spec:ReferenceLRUPolicy"),
    ("ARCPromotesPending", "policy", "arc", False, "kvoffload.spec:ReferenceARCPolicy"),
    ("LRUShortEvict", "policy", "any", False, "kvoffload.spec:ReferenceLRUPolicy"),
    ("LRUIgnoresRefCnt", "policy", "any", False, "kvoffload.spec:ReferenceLRUPolicy"),
]


def _run(snippet: str) -> BaseException | None:
    try:
        exec(compile(snippet, "<reproduction>", "exec"), {"__name__": "__reproduction__"})
    except BaseException as error:  # noqa: BLE001 - what the pasted test would report
        return error
    return None


@pytest.mark.parametrize(("bug", "kind", "policy", "strict", "fixed"), CASES, ids=[c[0] for c in CASES])
def test_reproduction_fails_on_the_bug_and_passes_once_fixed(
    bug: str, kind: str, policy: str, strict: bool, fixed: str
) -> None:
    result = run_conformance(kind, getattr(pb, bug), policy=policy, strict=strict, source=f"planted_bugs:{bug}")
    assert not result.ok and result.clause not in (None, "?"), result.report()
    snippet = result.reproduction
    import_line = f"from planted_bugs import {bug}\n"
    assert import_line in snippet, snippet

    on_bug = _run(snippet)
    assert isinstance(on_bug, AssertionError), f"{on_bug!r}\n{snippet}"
    assert str(on_bug).startswith(result.clause or ""), f"{on_bug}\n{result.report()}"

    module, _, name = fixed.partition(":")
    on_fix = _run(snippet.replace(import_line, f"from {module} import {name} as {bug}\n"))
    assert on_fix is None, f"the reproduction fails on the fixed target: {on_fix!r}\n{snippet}"


class _Builder:
    """A factory held by an instance: its ``__qualname__`` (``_Builder.build``) names the
    unbound function, which a reproduction must not call."""

    def __init__(self, bug: type) -> None:
        self.bug = bug

    def build(self, *args: object, **kwargs: object) -> object:
        return self.bug(*args, **kwargs)

    @classmethod
    def build_reference(cls, *args: object, **kwargs: object) -> object:
        from kvoffload.spec import ReferenceManager

        return ReferenceManager(*args, **kwargs)


def test_reproduction_imports_a_factory_only_when_its_name_resolves_to_it() -> None:
    """Without ``source=``, the Python API names the factory by module and qualname only
    when importing that name gives back the same factory; otherwise the snippet asks for it."""
    from kvoffload.conformance.lockstep.machine_base import FactoryRef

    bound = _Builder(pb.NoStoredEvent).build
    assert not FactoryRef.of(bound).importable
    assert FactoryRef.of(_Builder.build_reference).source == f"{__name__}:_Builder.build_reference"
    assert FactoryRef.of(pb.NoStoredEvent).source == "planted_bugs:NoStoredEvent"

    result = run_conformance("manager", bound, policy="any")
    assert not result.ok and result.clause == "M6", result.report()
    assert "factory = ...  # your factory:" in result.reproduction
    assert "_Builder.build(" not in result.reproduction
