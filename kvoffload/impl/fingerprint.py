"""The fingerprint test seam: how many bits of the 64-bit fingerprint the table sees.

``"default"`` keeps all 64 bits. ``"constant"`` makes every fingerprint 0 (every hash
collides with every other), ``"low_bits:K"`` keeps the low ``K`` bits (hashes collide in
groups). The table must stay exact in every mode (I8): the full hash decides.
"""

from __future__ import annotations

__all__ = ["FINGERPRINT_MODES", "fingerprint_mask"]

FINGERPRINT_MODES = ("default", "constant", "low_bits:K")

_ALL = (1 << 64) - 1


def fingerprint_mask(mode: str) -> int:
    """The mask applied to every fingerprint in ``mode`` (``ValueError`` if unknown)."""
    if not isinstance(mode, str):
        raise TypeError(f"fingerprint must be a str, got {type(mode).__name__}")
    if mode == "default":
        return _ALL
    if mode == "constant":
        return 0
    if mode.startswith("low_bits:"):
        try:
            bits = int(mode.split(":", 1)[1])
        except ValueError:
            bits = -1
        if 0 <= bits <= 64:
            return (1 << bits) - 1
    raise ValueError(f"fingerprint={mode!r} is not one of {', '.join(FINGERPRINT_MODES)} (0 <= K <= 64)")
