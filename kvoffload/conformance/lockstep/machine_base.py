"""What every conformance state machine shares: the target's factory, the mode, the
call log of the current example, run statistics and the ``fail`` that raises a
``ConformanceFailure`` carrying its clause ids and reproduction snippet."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, NoReturn

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from ..judge import Verdict, invoke, judge_refusal
from ..loading import call_source
from ...spec.clauses import clause_sort_key
from ..reports.result import CallLog, ConformanceFailure, ConformanceResult
from .twins import NOT_DETERMINISTIC, Call, Probe, Twins, twin_lines, twin_verdict

__all__ = ["RunStats", "FactoryRef", "ConformanceMachine", "TargetSetupError", "strict_rule"]


class TargetSetupError(Exception):
    """The factory could not build a target (not a contract violation)."""


@attrs.define
class FactoryRef:
    """A target factory and how a reproduction snippet imports it."""

    factory: Callable[..., Any]
    source: str  # "module:attr" or a description
    importable: bool = True

    @classmethod
    def of(cls, factory: Callable[..., Any], source: str | None = None) -> FactoryRef:
        if source is not None:
            return cls(factory, source, ":" in source)
        module = getattr(factory, "__module__", None)
        qualname = getattr(factory, "__qualname__", None)
        if module and qualname and _resolves(module, qualname, factory):
            return cls(factory, f"{module}:{qualname}")
        return cls(factory, repr(factory), False)

    def import_lines(self) -> list[str]:
        if not self.importable:
            return [f"factory = ...  # your factory: {self.source}"]
        module, _, attr = self.source.partition(":")
        head = attr.split(".")[0].removesuffix("()")  # "TestX().make_manager" imports TestX
        return [f"from {module} import {head}"]

    def call(self, arguments: dict[str, Any]) -> str:
        """The source of a call of the factory with keyword ``arguments``."""
        return call_source(self.source.partition(":")[2] if self.importable else "factory", arguments)


def _resolves(module: str, qualname: str, factory: Callable[..., Any]) -> bool:
    """Whether ``from module import …`` then ``qualname`` names ``factory`` itself: a
    reproduction must import what ran. A method bound to an instance, a function defined
    inside another or in ``__main__`` has a qualname that names something else or nothing."""
    if "<" in qualname or module == "__main__":
        return False
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target is factory or (target is not None and target == factory)


@attrs.define
class RunStats:
    """Counts over a whole run (all examples, shrinking included)."""

    steps: int = 0
    examples: int = 0
    clauses: set[str] = attrs.field(factory=set)
    #: checks that could not run on this target, each with why (never listed as exercised)
    skipped: set[str] = attrs.field(factory=set)
    progress: bool = False
    label: str = ""
    started: float = attrs.field(factory=time.perf_counter)
    last_report: float = 0.0

    def tick(self) -> None:
        self.steps += 1
        if self.progress and self.steps % 200 == 0:
            now = time.perf_counter()
            # A terminal gets one line rewritten every second; a log (CI) a new line
            # every ten seconds, so it stays readable.
            interactive = sys.stderr.isatty()
            if now - self.last_report >= (1.0 if interactive else 10.0):
                self.last_report = now
                rate = self.steps / max(now - self.started, 1e-9)
                line = f"{self.label}: {self.examples} examples, {self.steps} steps, {rate:.0f} steps/s"
                sys.stderr.write(f"\r{line} " if interactive else f"{line}\n")
                sys.stderr.flush()

    def exercised(self) -> tuple[str, ...]:
        """The clauses exercised so far, in contract order."""
        return tuple(sorted(self.clauses, key=clause_sort_key))

    def record(self, result: ConformanceResult, seconds: float) -> None:
        """Put this run's counts into ``result``."""
        result.steps, result.examples, result.seconds = self.steps, self.examples, seconds
        result.clauses_exercised = self.exercised()

    def done(self) -> None:
        if self.progress and self.last_report and sys.stderr.isatty():
            sys.stderr.write("\n")
            sys.stderr.flush()


def strict_rule(function: Callable[[Any, st.DataObject], None]) -> Callable[[Any, st.DataObject], None]:
    """A rule of strict mode only (protocol-breaking or badly typed calls), drawing from ``data``."""
    return precondition(lambda self: self.strict)(rule(data=st.data())(function))


class ConformanceMachine(RuleBasedStateMachine):
    """Base of the machines; subclasses are made per run by ``runner.machine_for``."""

    factory_ref: ClassVar[FactoryRef]
    strict: ClassVar[bool] = False
    policy_mode: ClassVar[str] = "any"
    stats: ClassVar[RunStats]
    kind: ClassVar[str] = ""
    target_var: ClassVar[str] = "t"
    extra_imports: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self.stats.examples += 1
        self.log = CallLog(
            self.target_var,
            [
                "import itertools",
                "from kvoffload.spec import BlockStatus, ContractViolation",
                "from kvoffload.conformance import OneShot",
                *self.extra_imports,
                *self.factory_ref.import_lines(),
            ],
        )
        self.construct = ""

    def build(self, **arguments: Any) -> Any:
        """Call the factory with keywords (and remember how: for the snippet, and for a twin)."""
        self.construct, self.arguments = self.factory_ref.call(arguments), arguments
        try:
            return self.factory_ref.factory(**arguments)
        except Exception as error:
            raise TargetSetupError(f"{self.factory_ref.source}({arguments}) raised {error!r}") from error

    def fresh_target(self) -> Any:
        """Another target, made as ``build`` made this example's (a twin: ``judge_twins``)."""
        return self.factory_ref.factory(**self.arguments)

    def exercised(self, *clauses: str) -> None:
        self.stats.clauses.update(clauses)

    def step(self) -> None:
        self.stats.tick()

    def logged(self, prefix: str, source: str) -> str:
        """A step logged as ``var = source`` with a fresh ``var`` (``prefix`` and a number): its name."""
        self.step()
        var = self.log.var(prefix)
        self.log.add(f"{var} = {source}")
        return var

    def refused(self, clause: str, source: str, note: str, what: str, function: Callable[..., Any], *args: Any) -> None:
        """``function(*args)``, logged as ``source``, breaks the caller protocol: it must raise a
        ``ContractViolation`` (B2, B3, P2, P3), else a failure of ``clause`` about ``what``; the
        snippet's line fails with ``clause: note`` when it does not raise."""
        self.log.add_raising(source, "ContractViolation", f"{clause}: {note}")
        self.exercised(clause)
        self.judged(judge_refusal(invoke(function, *args), clause, what))

    def call_or_fail(self, clause: str, what: str, function: Callable[..., Any], *args: Any, source: str = "") -> Any:
        """``function(*args)`` on the target, a step logged as ``source`` when given; its
        value, or a failure of ``clause`` if it raised (the call is valid there)."""
        if source:
            self.step()
            self.log.add(source)
        value, error = invoke(function, *args)
        if error is not None:
            self.fail(clause, f"{what} raised {error!r}")
        return value

    @staticmethod
    def draw_unique(data: st.DataObject, candidates: list[Any], label: str, least: int = 1,
                    most: int | None = None) -> list[Any]:
        """Distinct ``candidates`` (``least`` to ``most`` of them, default all)."""
        size = len(candidates) if most is None else most
        return data.draw(st.lists(st.sampled_from(candidates), min_size=least, max_size=size, unique=True), label=label)

    def draw_with_others(self, data: st.DataObject, candidates: list[Any], pool: list[Any]) -> list[Any]:
        """One or two distinct ``candidates``, then up to two distinct ``pool`` members, each
        hash once in drawn order (a touch of pending blocks, maybe with others: L2, A3)."""
        items = self.draw_unique(data, candidates, "hashes", most=2)
        return list(dict.fromkeys(items + self.draw_unique(data, pool, "others", 0, 2)))

    def fail(self, clauses: str | Iterable[str], message: str, check: str = "") -> NoReturn:
        """Raise the violation; ``check`` is a Python expression that holds on a conforming
        target, rendered as the snippet's last line."""
        ids, message = self.blame((clauses,) if isinstance(clauses, str) else tuple(clauses), message)
        failure = ConformanceFailure(ids, message)
        failing = f"assert {check}, {failure.message!r}" if check else f"# ^ {failure.message}"
        failure.reproduction = self.log.render(self.construct, failing, f"{self.command()}\n{failure.message}")
        raise failure

    def command(self) -> str:
        """The CLI command that judges this target in this mode (a reproduction's first line)."""
        return (f"kvoffload conform {self.kind} {self.factory_ref.source} --policy {self.policy_mode}"
                f"{' --strict' if self.strict else ''}")

    def blame(self, ids: tuple[str, ...], message: str) -> tuple[tuple[str, ...], str]:
        """The clauses a failure names and its message (a hook: a subclass adds the clauses
        of its own interface that the failure also depends on)."""
        return ids, message

    def judge_twins(self, twins: Twins, calls: Sequence[Call], probes: tuple[Probe, Probe], method: str, mark: int,
                    clause: str = "I7", cut: int | None = None, instead: tuple[Sequence[Call], Sequence[str]] = ((), ()),
                    export: bool = False) -> None:
        """``clause`` on ``twins`` (``twins.twin_verdict``) after the judged call (the last of
        ``calls``, or those from ``cut`` on), logged from line ``mark`` on: a failure whose
        reproduction builds the twin, or a note when it cannot be judged (the note that the
        target is not deterministic ends a run's checks). ``instead``: the calls the twin
        without it makes in its place, and their lines; ``export``: see ``twin_lines``."""
        if NOT_DETERMINISTIC in self.stats.skipped:
            return
        found = twin_verdict(twins, calls, probes, method, self.log.name, self.target_var, clause, cut, instead[0])
        if isinstance(found, str):
            self.stats.skipped.add(found)
        elif found is not None:
            self.log.lines = twin_lines(self.log.lines, mark, self.construct, probes[1].source(self.log.name),
                                        self.target_var, instead[1], export)
            self.judged(found)
        self.exercised(clause)

    def teardown(self) -> None:
        """The end of every example: ``close`` when it ran to its end (a failing example keeps
        its own failure; one whose setup never ran, no target built, has no state)."""
        if sys.exc_info()[1] is None and hasattr(self, "target"):
            self.close()

    def close(self) -> None:
        """The calls that end an example that ran to its end (a hook: the machines' probe)."""

    def judged(self, verdict: Verdict | None) -> None:
        """Fail with the judge's verdict, if there is one."""
        if verdict is not None:
            self.fail(verdict.clauses, verdict.message, verdict.check)
