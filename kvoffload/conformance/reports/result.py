"""What a backend author reads: the failure exception, the result object, and the
reproduction snippet built from a recorded call log."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["ConformanceFailure", "ConformanceResult", "CallLog"]


class ConformanceFailure(AssertionError):
    """A target broke clause ``clause`` (also listed first in ``clauses``).

    Carries the reproduction snippet of the example that failed, so the runner can
    report it after hypothesis has shrunk the failing call sequence.
    """

    def __init__(self, clauses: Iterable[str], message: str, reproduction: str = "") -> None:
        self.clauses = tuple(dict.fromkeys(clauses))
        self.clause = self.clauses[0] if self.clauses else "?"
        self.message = message if message.startswith(self.clause) else f"{self.clause}: {message}"
        self.reproduction = reproduction
        super().__init__(self.message)


@attrs.define
class ConformanceResult:
    """The outcome of one conformance run (``check_manager`` and friends)."""

    target: str
    kind: str
    policy: str
    strict: bool
    ok: bool
    clauses: tuple[str, ...] = ()
    message: str = ""
    reproduction: str = ""
    steps: int = 0
    examples: int = 0
    clauses_exercised: tuple[str, ...] = ()
    seconds: float = 0.0
    seed: int = 0
    interface: str = "contract"
    clauses_skipped: tuple[str, ...] = ()
    #: the LRU order judged with ``policy="lru"`` (L1 ``recency`` or N9 ``request-rank``)
    lru_order: str = "-"

    @property
    def clause(self) -> str | None:
        """The first violated clause, or ``None`` when the target conforms."""
        return self.clauses[0] if self.clauses else None

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        """One line: what ran, how much, how fast."""
        order = f", lru-order={self.lru_order}" if self.lru_order != "-" else ""
        mode = (f"{self.kind}, interface={self.interface}, policy={self.policy}{order}, "
                f"{'strict' if self.strict else 'default'} mode, seed={self.seed}")
        return (
            f"{self.steps} steps in {self.examples} examples, {self.seconds:.1f} s "
            f"({self.steps_per_second:.0f} steps/s) [{mode}]"
        )

    def report(self) -> str:
        """The text the CLI prints."""
        if self.ok:
            exercised = " ".join(self.clauses_exercised)
            skipped = "".join(f"\nskipped: {reason}" for reason in self.clauses_skipped)
            return (
                f"{self.target} conforms: {self.summary()}\n"
                f"clauses exercised: {exercised}{skipped}"
            )
        return (
            f"{self.target} VIOLATES {', '.join(self.clauses)}\n"
            f"{self.message}\n\n"
            f"Reproduction (the shrunk call sequence; paste and run it):\n\n"
            f"{self.reproduction}\n"
            f"({self.summary()})"
        )


class CallLog:
    """A recorded call sequence of one example, rendered as runnable Python."""

    def __init__(self, target_var: str, imports: list[str]) -> None:
        self.target_var = target_var
        self.imports = list(imports)
        self.lines: list[str] = []
        self._hash_names: dict[bytes, str] = {}
        self._counter = 0

    @classmethod
    def naming(cls, target_var: str, hashes: Iterable[bytes], imports: Iterable[str] = ()) -> CallLog:
        """A log whose hash names start with ``hashes`` in order (h0, h1, ...)."""
        log = cls(target_var, list(imports))
        for h in hashes:
            log.name(h)
        return log

    def name(self, value: object) -> str:
        """Source form of a hash (``h0``, ``h1``, ...) or of any other element (repr)."""
        if type(value) is bytes:
            return self._hash_names.setdefault(value, f"h{len(self._hash_names)}")
        return repr(value)

    def var(self, prefix: str = "r") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def add(self, line: str) -> None:
        self.lines.append(line)

    def add_raising(self, call: str, kind: str, why: str) -> None:
        """A call that must raise ``kind``: the snippet fails with ``why`` if it does not."""
        self.lines.append(f"try:\n    {call}\nexcept {kind}:\n    pass  # expected\nelse:\n    raise AssertionError({why!r})")

    def render(self, construct: str, failing: str = "", header: str = "") -> str:
        """The whole snippet: imports, hash definitions, the calls, the failing check."""
        comments = [f"# {line}" for line in header.splitlines()]
        hashes = [f'{name} = bytes.fromhex("{value.hex()}")' for value, name in self._hash_names.items()]
        failing_check = [failing] if failing else []
        out = [*comments, *self.imports, "", *hashes, f"{self.target_var} = {construct}", *self.lines, *failing_check]
        return "\n".join(out) + "\n"
