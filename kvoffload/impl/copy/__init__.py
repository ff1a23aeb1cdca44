"""Worker-side copy handlers: GPU ↔ CPU KV-cache block copies (H1–H4, S3).

``build_cpu_handlers`` is the one entry point for ``OffloadingSpec.get_handlers``;
``OffloadingWorker`` routes jobs by medium; ``KVLayout`` names the supported layouts.
"""

from __future__ import annotations

from .buffers import KVBuffers
from .handlers import CpuGpuHandler, Direction, build_cpu_handlers, cpu_handler_triples, default_path
from .layouts import KVLayout, kv_planes
from .paths import CopyPath, available_paths
from .worker import OffloadingWorker

__all__ = [
    "CopyPath",
    "CpuGpuHandler",
    "Direction",
    "KVBuffers",
    "KVLayout",
    "OffloadingWorker",
    "available_paths",
    "build_cpu_handlers",
    "cpu_handler_triples",
    "default_path",
    "kv_planes",
]
