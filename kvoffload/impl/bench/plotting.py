"""The one way the bench commands reach matplotlib (the ``plot`` extra) for ``--plot``."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["pyplot"]


def pyplot(error: type[click.ClickException] = click.ClickException) -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, never a window); without
    matplotlib, ``error`` naming the extra to install. ``bench manager`` and ``bench copy``
    also call it before their run, so a missing matplotlib fails before anything is
    measured, not after."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise error("--plot needs matplotlib: pip install 'kvoffload[plot]' (or matplotlib)") from None
    return plt
