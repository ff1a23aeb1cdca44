"""The CPython object layout the compiled batch reader relies on, checked at import.

Offsets of ``ob_type``, ``ob_size``, a list's ``ob_item`` and a ``bytes`` object's data
(CPython 3.8+, 64-bit, GIL build, little endian). :data:`LAYOUT_OK` says whether this
interpreter has them, checked on live objects with ``ctypes`` (no compiled code, no numba
import). See ``pyobj`` for the reader.
"""

from __future__ import annotations

import ctypes
import sys
import sysconfig

__all__ = ["BYTES_DATA", "LAYOUT_OK", "LIST_ITEMS", "OB_SIZE", "OB_TYPE"]

# Offsets (bytes) in CPython 3.8+ (64-bit, GIL build) object headers.
OB_TYPE = 8
OB_SIZE = 16
LIST_ITEMS = 24  # PyListObject.ob_item (PyObject **)
BYTES_DATA = 32  # PyBytesObject.ob_sval (after ob_shash), 8-byte aligned


def _layout_ok() -> bool:
    """Check every offset above on live objects (without compiled code)."""
    if sys.implementation.name != "cpython" or sys.byteorder != "little":
        return False
    if sys.maxsize != 2**63 - 1 or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    if sys.getsizeof(b"") != BYTES_DATA + 1:
        return False
    try:
        probes = [bytes(range(1, 33)), b"\x07" * 36, b"k"]
        box = list(probes)
        word = ctypes.c_int64.from_address
        if word(id(box) + OB_SIZE).value != len(box) or word(id(box) + OB_TYPE).value != id(list):
            return False
        items = word(id(box) + LIST_ITEMS).value
        for i, probe in enumerate(probes):
            if word(items + 8 * i).value != id(probe):
                return False
            if word(id(probe) + OB_TYPE).value != id(bytes) or word(id(probe) + OB_SIZE).value != len(probe):
                return False
            if (id(probe) + BYTES_DATA) % 8 or ctypes.string_at(id(probe) + BYTES_DATA, len(probe)) != probe:
                return False
    except Exception:  # pragma: no cover - any surprise means "do not use it"
        return False
    return True


LAYOUT_OK: bool = _layout_ok()
