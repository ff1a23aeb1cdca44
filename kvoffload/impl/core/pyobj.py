"""Reading a ``list`` of ``bytes`` from compiled code (CPython object layout, read only).

The manager's per-call cost used to be dominated by Python passes over the batch (type
check, lengths, ``b"".join``): tens of ns per hash each. Instead, the compiled entry
points read the list directly: ``ob_item`` of the list, then ``ob_type``, ``ob_size``
and ``ob_sval`` of every element. A compiled call holds the GIL and runs no Python code,
so the list (kept alive by the caller) can neither change nor be freed meanwhile.

Nothing is written through these pointers, and nothing is trusted: an element whose type
is not exactly ``bytes`` or whose length is 0 makes the compiled call return
``GATHER_BAD`` before it changes anything, and the manager then takes the slow path
(``read_hashes``: the contract's errors, or ``bytes`` subclasses copied to plain bytes).

:data:`LAYOUT_OK` (``cpython``) says whether this interpreter has the layout assumed here;
where it is ``False`` the manager packs batches in Python (``b"".join``) instead.
"""

from __future__ import annotations

import ctypes
from typing import Any

from .cpython import BYTES_DATA, LAYOUT_OK, LIST_ITEMS, OB_SIZE, OB_TYPE
from .jit import TWIN

__all__ = ["LAYOUT_OK", "LIST_ITEMS", "OB_TYPE", "OB_SIZE", "BYTES_DATA", "peek"]


def _compiled_peek() -> Any:
    """``peek(addr)`` for compiled code: one aligned int64 load."""
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _peek(typingctx, addr):  # type: ignore[no-untyped-def]
        """The int64 stored at address ``addr`` (8-byte aligned, readable)."""
        if not isinstance(addr, types.Integer):
            return None
        sig = types.int64(types.int64)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            ptr_type = context.get_value_type(types.CPointer(types.int64))  # type: ignore[no-untyped-call]
            address = context.cast(builder, args[0], signature.args[0], types.int64)
            return builder.load(builder.inttoptr(address, ptr_type))

        return sig, codegen

    return _peek


def _twin_peek(addr: Any) -> Any:
    """The twin's ``peek``: the same load through ``ctypes`` (an ``np.int64``, as compiled)."""
    import numpy as np

    return np.int64(ctypes.c_int64.from_address(int(addr)).value)


#: ``peek(addr)`` (typed ``Any`` for mypy: numba intrinsics are untyped).
peek: Any = _twin_peek if TWIN else _compiled_peek()
