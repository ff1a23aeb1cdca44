"""``kvoffload mutation run|report``: the suite's power, measured by cosmic-ray."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from .classified import EQUIVALENT
from .targets import TARGETS

__all__ = ["mutation"]

DEFAULT_VLLM_PYTHON = ".venv-vllm/bin/python"


def _need_cosmic_ray() -> None:
    try:
        import cosmic_ray  # noqa: F401
    except ImportError:
        raise click.UsageError("cosmic-ray is not installed: pip install -e '.[dev]' (it is a dev dependency)")


@click.group()
def mutation() -> None:
    """Mutation testing of the conformance suite (cosmic-ray; targets: vllm-cpu (0.32),
    vllm033-cpu, vllm019-cpu (0.19's LRU, through the batch API), reference-policies; the
    ``-mc`` twins judge by the model checker)."""


def _finish(target_name: str, workdir: Path, header: str, report: Path | None, check: bool) -> None:
    from .report import render, tally

    target = TARGETS[target_name]
    tallies = tally(target, workdir)
    text = render(target, tallies, header)
    click.echo(text)
    if report is not None:
        report.write_text(text + "\n", encoding="utf-8")
    failing = [s for t in tallies for s in t.survivors if s.verdict != EQUIVALENT]
    if check and failing:
        click.echo(f"FAIL: {len(failing)} surviving mutant(s) not known to be equivalent: "
                   + ", ".join(s.key for s in failing), err=True)
        sys.exit(1)


@mutation.command()
@click.option("--target", "target_name", type=click.Choice(sorted(TARGETS)), required=True)
@click.option("--sample", type=int, default=0, show_default=True, help="run N in-scope mutants drawn with --seed (0: all)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--workdir", type=click.Path(path_type=Path), default=None, help="default: .mutation/TARGET")
@click.option("--python", "python", default=None,
              help=f"the python that runs the suites (vLLM targets: {DEFAULT_VLLM_PYTHON}, or $KVOFFLOAD_VLLM_PYTHON)")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="seconds per mutant")
@click.option("--report", type=click.Path(path_type=Path), default=None, help="also write the markdown here")
@click.option("--check", is_flag=True, help="exit 1 if a mutant survives that is not classified equivalent")
@click.option("--resume", is_flag=True, help="keep the sessions in --workdir: judge what is left and the survivors again")
@click.option("--only", "only", multiple=True, metavar="KEY",
              help="judge only this mutant (its key as the report lists it, target|file|line:col|operator#n); "
                   "repeatable; replaces --sample")
def run(target_name: str, sample: int, seed: int, workdir: Path | None, python: str | None,
        timeout: float, report: Path | None, check: bool, resume: bool, only: tuple[str, ...]) -> None:
    """Copy the target's files, let cosmic-ray mutate them, judge each mutant with the suite."""
    _need_cosmic_ray()
    from .session import run_target

    target = TARGETS[target_name]
    workdir = (workdir or Path(".mutation") / target_name).resolve()
    if python is None:
        python = os.environ.get("KVOFFLOAD_VLLM_PYTHON", DEFAULT_VLLM_PYTHON) if target.needs_vllm else sys.executable
    started = time.monotonic()
    try:
        in_scope, chosen = run_target(target, workdir, python, sample, seed, timeout, resume, frozenset(only))
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    seconds = time.monotonic() - started
    what = f"a seeded sample of {chosen} (seed {seed})" if chosen < in_scope else f"all {chosen}"
    selection = f" --sample {sample} --seed {seed}" if sample else ""
    if only:
        what, selection = f"{chosen} chosen", "".join(f" --only '{key}'" for key in only)
    header = (f"### `{target_name}`: {what} of {in_scope} in-scope mutants, {seconds / 60:.1f} min\n\n"
              f"`kvoffload mutation run --target {target_name}{selection}`")
    _finish(target_name, workdir, header, report, check)


@mutation.command()
@click.option("--target", "target_name", type=click.Choice(sorted(TARGETS)), required=True)
@click.option("--workdir", type=click.Path(path_type=Path), default=None, help="default: .mutation/TARGET")
@click.option("--check", is_flag=True)
def report(target_name: str, workdir: Path | None, check: bool) -> None:
    """Print the report of a run's sessions again (after classifying survivors, say)."""
    _need_cosmic_ray()
    workdir = (workdir or Path(".mutation") / target_name).resolve()
    _finish(target_name, workdir, f"### `{target_name}`", None, check)
