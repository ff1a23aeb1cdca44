"""The PNG of ``kvoffload replay --plot`` (needs matplotlib: the ``plot`` extra).

Importing this module raises ``ImportError`` without matplotlib; the command catches
that and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only; never a window
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    from .cli import Curves

__all__ = ["draw_curves"]

#: name → (legend label, colour, line style)
_STYLE = {
    "lru": ("LRU", "tab:blue", "o-"),
    "arc": ("ARC", "tab:orange", "s-"),
    "s3fifo": ("S3-FIFO", "tab:green", "^-"),
    "sieve": ("SIEVE", "tab:red", "v-"),
    "belady": ("Belady (offline optimum)", "black", "--"),
}


def draw_curves(curves: Curves, path: Path) -> None:
    """Hit ratio (%) against capacity (blocks, log scale); Belady dashed, ceiling dotted."""
    figure, axes = plt.subplots(figsize=(8, 5), dpi=120)
    for name, values in curves.ratios.items():
        label, color, style = _STYLE.get(name, (name, "gray", "-"))
        axes.plot(curves.capacities, [100 * v for v in values], style, color=color, label=label, markersize=4)
    axes.axhline(100 * curves.ceiling, color="gray", linestyle=":", label="infinite cache (ceiling)")
    axes.set_xscale("log")
    axes.set_xlabel("cache capacity (blocks)")
    axes.set_ylabel("hit ratio (% of blocks served from the cache)")
    trace = curves.trace
    axes.set_title(f"{trace.name}: {trace.num_requests:,} requests, {trace.num_keys:,} distinct blocks")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
