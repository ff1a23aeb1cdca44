"""Factories of the mutated secondary tiers for ``kvoffload conform tier`` (T7–T13), in the
keywords it calls them with: each builds its class from the scratch package (the mutant), as
vLLM's ``SecondaryTierFactory`` would, over ``standalone_spec``."""

from __future__ import annotations

import importlib
from typing import Any

from ..impl.vllm.tiers import standalone_spec

__all__ = ["fs_tier"]


def fs_tier(primary_kv_view: memoryview, workdir: str, num_blocks: int, enable_events: bool = False) -> Any:
    """vLLM 0.33's ``FileSystemTierManager`` of the scratch package: files under ``workdir``
    (unbounded: ``num_blocks`` unused), one read and one write thread."""
    manager = importlib.import_module("kvo_mut_vllm_tiering.fs.manager")
    assert primary_kv_view.strides is not None
    return manager.FileSystemTierManager(standalone_spec(primary_kv_view.strides[0], enable_events), primary_kv_view,
                                         "fs", root_dir=workdir, n_read_threads=1, n_write_threads=1,
                                         enable_kv_events=enable_events)
