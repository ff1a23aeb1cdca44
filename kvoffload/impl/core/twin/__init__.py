"""The plain-Python twin of :mod:`kvoffload.impl.core` (see :mod:`..jit`).

This package's ``__path__`` is its parent's directory: ``kvoffload.impl.core.twin.ops``
is ``core/ops.py`` imported a second time, with :func:`..jit.kernel` leaving every
function uncompiled (and ``prefetch`` / ``peek`` as plain Python). Importing it compiles
nothing.
"""

from __future__ import annotations

import os

__path__ = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
