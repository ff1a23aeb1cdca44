"""A manager an outside author wrote for vLLM 0.32's per-key interface (``dave_lru``: from
vLLM's own sources, without reading this project), and the bugs that author planted in
it (``dave_lru/BUGS.md``). The suite judges it as it is: the correct manager conforms in
the default mode, every planted bug is caught with the clause named.

Strict mode is not asked of it: like vLLM 0.32's own manager, which its author matched on
purpose, it gives each duplicate key of one ``prepare_store`` a block (a C5 breach the
contract answers with M5.1 in strict mode)."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")
try:  # the author's module imports 0.32's metrics classes (0.33 still has them)
    from dave_lru import bugs, manager
except ImportError as error:  # pragma: no cover - depends on the installed release
    pytest.skip(f"dave_lru needs vLLM 0.32: {error}", allow_module_level=True)

from kvoffload.conformance import check_manager  # noqa: E402

#: (bug, clauses one of which is named first)
CAUGHT = [
    ("store_recency", {"L3", "K5"}),
    ("failed_store_leak", {"K9", "I6", "M7"}),
    ("offer_unshielded", {"M5"}),
    ("load_pin_flag", {"K9", "I3", "M3"}),
    ("finish_tail_first", {"L3", "K5"}),
]


def test_K1_K9_the_outside_authors_manager_conforms() -> None:
    result = check_manager(manager.make_manager, policy="lru")
    assert result.ok, result.report()
    assert result.interface == "vllm"


@pytest.mark.parametrize(("bug", "clauses"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_K1_K9_the_outside_authors_bugs_are_caught(bug: str, clauses: set[str]) -> None:
    result = check_manager(getattr(bugs, f"make_{bug}"), policy="lru", shrink=False)
    assert not result.ok, f"{bug} was not caught: {result.summary()}"
    assert result.clause in clauses, result.report()
