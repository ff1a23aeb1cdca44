"""Helpers of the vLLM lane. vLLM is imported lazily: the default test run (without
vLLM) imports nothing from here: every test module skips before importing it."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any


def offloading_config(
    extra: dict[str, Any],
    *,
    tokens_per_block: int = 16,
    tokens_per_hash: int = 16,
    blocks_per_chunk: int = 1,
    groups: int = 1,
    bytes_per_block: int = 32768,
    world_size: int = 1,
    events: bool = False,
    group_tokens: tuple[int, ...] | None = None,
) -> Any:
    """A vLLM 0.32 ``OffloadingConfig`` as ``build_offloading_config`` would make it
    (``groups`` groups of ``tokens_per_block``, or one group per ``group_tokens`` entry)."""
    from vllm.v1.kv_offload.config import (
        OffloadingCacheConfig,
        OffloadingConfig,
        OffloadingGroupConfig,
        OffloadingModelConfig,
        OffloadingParallelConfig,
    )

    sizes = group_tokens if group_tokens is not None else (tokens_per_block,) * groups
    return OffloadingConfig(
        groups=tuple(
            OffloadingGroupConfig(tokens_per_block=size, layer_names=(f"l{g}",), group_id=g)
            for g, size in enumerate(sizes)
        ),
        worker_kv_bytes_per_block=bytes_per_block,
        enable_kv_cache_events=events,
        extra_config={"spec_name": "KVOffloadingSpec", "spec_module_path": "kvoffload.impl.vllm", **extra},
        engine_id="test-engine",
        model=OffloadingModelConfig(name="tiny", dtype="float32"),
        cache=OffloadingCacheConfig(tokens_per_hash=tokens_per_hash, blocks_per_chunk=blocks_per_chunk),
        parallel=OffloadingParallelConfig(
            rank=0,
            world_size=world_size,
            tp_size=world_size,
            pp_size=1,
            pcp_size=1,
            dcp_size=1,
            data_parallel_index=0,
            data_parallel_size=1,
            data_parallel_rank_local=None,
            is_parallelism_agnostic=True,
        ),
    )


def key(i: int, group: int = 0) -> bytes:
    """An ``OffloadKey``: a 32-byte block hash plus the 4-byte group index (36 bytes)."""
    from vllm.v1.kv_offload.base import make_offload_key

    return bytes(make_offload_key(i.to_bytes(32, "big"), group))


def run_reproduction(reproduction: str) -> BaseException | None:
    """Exec a printed reproduction; what it raised (None: it ran clean)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(reproduction, "<reproduction>", "exec"), {"__name__": "__repro__"})
    except BaseException as error:  # noqa: BLE001 - the reproduction's verdict
        return error
    return None


def forget_modules(package: str) -> None:
    """Drop ``package`` and its submodules from ``sys.modules`` (a mutation target's scratch
    copy, imported again after a file of it changed)."""
    for name in [m for m in sys.modules if m.startswith(package)]:
        del sys.modules[name]


def judge_mutant(target: Any, tmp_path: Any, file: str, original: str, mutated: str,
                 before: tuple[str, ...] = ()) -> tuple[list[int], int, str]:
    """A mutation target's files copied into ``tmp_path``; ``judge`` (``kvoffload.mutation``)
    of ``before`` (default: ``file``) as shipped, then of ``file`` with ``original`` (which
    must occur once) replaced by ``mutated``: both exit codes, and ``file``'s shipped text."""
    from kvoffload.mutation.judge import judge
    from kvoffload.mutation.scratch import build_scratch, source_dir

    root = build_scratch(target, source_dir(target, sys.executable), tmp_path)
    copy = root / target.package / file
    text = copy.read_text(encoding="utf-8")
    assert text.count(original) == 1, f"{original!r} must occur once in {file}"
    sys.path.insert(0, str(root))
    try:
        shipped = [judge(target.name, name) for name in (before or (file,))]
        forget_modules(target.package)
        copy.write_text(text.replace(original, mutated), encoding="utf-8")
        return shipped, judge(target.name, file), text
    finally:
        sys.path.remove(str(root))
        forget_modules(target.package)
