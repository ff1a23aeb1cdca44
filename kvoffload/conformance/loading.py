"""Import a target factory given as ``MODULE:FACTORY`` (the CLI's argument)."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

import click

__all__ = ["FactoryLoadError", "builtin_source", "call_source", "load_factory"]


class FactoryLoadError(click.UsageError):
    """The factory could not be loaded: a usage error, so a command that loads one exits
    with status 2 and this message without catching it."""


#: ``impl`` and ``reference``: where our own factory named ``{}`` (``lru_manager``, ``backend``, ...) is
BUILTIN_SOURCES = {"impl": "kvoffload.impl.factories:{}", "reference": "kvoffload.conformance.factories:reference_{}"}


def builtin_source(kind: str, target: str, policy: str = "lru") -> str:
    """The ``MODULE:FACTORY`` of our own ``kind`` (manager, backend, policy; handler: ``impl``
    only) for ``policy``: ``impl`` the production one, ``reference`` the model's; any
    other target as given."""
    if kind == "handler":
        return "kvoffload.impl.copy:build_cpu_handlers" if target == "impl" else target
    name = kind if kind == "backend" else f"{policy}_{kind}"
    return BUILTIN_SOURCES[target].format(name) if target in BUILTIN_SOURCES else target


def call_source(function: str, arguments: Mapping[str, Any]) -> str:
    """The source of ``function`` called with keyword ``arguments`` (each value's repr)."""
    return f"{function}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"


def load_factory(spec: str) -> Callable[..., Any]:
    """``"package.module:name"`` (``name`` may be dotted) → the callable; the current
    directory is importable, as are ``PYTHONPATH`` entries."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise FactoryLoadError(f"{spec!r} is not of the form MODULE:FACTORY (e.g. mypkg.offload:make_manager)")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as error:
        raise FactoryLoadError(f"cannot import module {module_name!r}: {type(error).__name__}: {error}") from error
    try:
        target = functools.reduce(getattr, attribute.split("."), target)
    except AttributeError:
        raise FactoryLoadError(f"module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise FactoryLoadError(f"{spec} is a {type(target).__name__}, not a callable factory")
    return target  # type: ignore[no-any-return]
