"""``check_handler`` / ``kvoffload conform handler``: passes our handlers, catches bugs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

import kvoffload.impl.copy.handlers as handlers  # noqa: E402
from kvoffload.conformance.lockstep.handler import check_handler, handler  # noqa: E402
from kvoffload.impl.copy import build_cpu_handlers  # noqa: E402
from kvoffload.spec.errors import ContractViolation  # noqa: E402


@pytest.mark.parametrize("path", ["direct", "gather", "per_block", "runs", "index"])
def test_our_handlers_conform(path):
    def factory(*args):
        return build_cpu_handlers(*args, path=path)

    result = check_handler(factory, max_examples=25, seed=1)
    assert result.ok, result.format()
    assert result.examples >= 25


class _Wrapper:
    def __init__(self, inner):
        self.inner = inner

    def transfer_async(self, job_id, spec):
        return self.inner.transfer_async(job_id, spec)

    def get_finished(self):
        return self.inner.get_finished()

    def wait(self, job_ids):
        self.inner.wait(job_ids)


class ReportsTwice(_Wrapper):
    def __init__(self, inner):
        super().__init__(inner)
        self.last = []

    def get_finished(self):
        out = self.last + self.inner.get_finished()
        self.last = out[-1:]
        return out


class ReportsNewestFirst(_Wrapper):
    def get_finished(self):
        return list(reversed(self.inner.get_finished()))


class AcceptsAnything(_Wrapper):
    def transfer_async(self, job_id, spec):
        try:
            return self.inner.transfer_async(job_id, spec)
        except ContractViolation:
            return True  # a silent accept, never reported


def wrapped(store_cls=_Wrapper, load_cls=_Wrapper):
    def factory(*args):
        store, load = build_cpu_handlers(*args)
        return store_cls(store), load_cls(load)

    return factory


def test_catches_off_by_one_in_h3_skip(monkeypatch):
    real = handlers.load_pairs

    def skip_one_less(offloaded_ids, gpu_ids, factor):
        subs, gpus = real(offloaded_ids, gpu_ids, factor)
        if len(gpu_ids) < len(offloaded_ids) * factor:
            subs = subs - 1  # reads the sub-block before the right one
        return subs, gpus

    monkeypatch.setattr(handlers, "load_pairs", skip_one_less)
    result = check_handler(build_cpu_handlers, max_examples=60, seed=0, factors=(2, 4))
    assert not result.ok
    assert result.violations[0].clause == "H3", result.format()
    assert "expected sub-block" in result.violations[0].message


def test_catches_double_report():
    result = check_handler(wrapped(store_cls=ReportsTwice), max_examples=30, seed=0, shrink=False)
    assert [v.clause for v in result.violations] == ["H2"], result.format()
    assert "twice" in result.violations[0].message
    assert result.violations[0].reproduction  # steps to reproduce


def test_catches_out_of_order_report():
    result = check_handler(wrapped(load_cls=ReportsNewestFirst), max_examples=60, seed=0, shrink=False)
    assert [v.clause for v in result.violations] == ["H2"], result.format()
    assert "submission order" in result.violations[0].message


def test_catches_accepted_bad_spec():
    result = check_handler(wrapped(store_cls=AcceptsAnything), max_examples=60, seed=0, shrink=False)
    assert [v.clause for v in result.violations] == ["H1"], result.format()


def test_cli_exit_codes():
    runner = CliRunner()
    ok = runner.invoke(handler, ["kvoffload.impl.copy:build_cpu_handlers", "--max-examples", "5"])
    assert ok.exit_code == 0, ok.output
    assert "conforms" in ok.output
    missing = runner.invoke(handler, ["no_such_module_xyz:factory"])
    assert missing.exit_code == 2
    bad = runner.invoke(handler, ["tests_copy_planted_missing"])
    assert bad.exit_code == 2


def test_cli_reports_violation(monkeypatch):
    import sys
    import types

    module = types.ModuleType("planted_copy_factory")
    module.factory = wrapped(store_cls=ReportsTwice)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "planted_copy_factory", module)
    out = CliRunner().invoke(handler, ["planted_copy_factory:factory", "--max-examples", "20", "--no-shrink"])
    assert out.exit_code == 1, out.output
    assert "H2:" in out.output and "reproduction" in out.output
