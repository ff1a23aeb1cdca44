"""The host side of CPU offloading: one host plane per device plane (H3, H4).

Each device plane (a KV tensor, or one K/V half of it) gets a host tensor of
``num_cpu_blocks · f`` GPU-sized sub-blocks; offloaded block ``b`` is sub-blocks
``b·f … b·f+f−1`` (H3). Host planes are contiguous, so a run of consecutive sub-blocks
is one contiguous range (one DMA on CUDA), and pinned when the KV cache lives on CUDA so
that ``non_blocking`` copies are truly asynchronous (H4). The store and the load handler
share one ``KVBuffers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import torch

from .layouts import KVLayout, kv_planes, resolve_layouts

__all__ = ["KVBuffers"]


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    return value


def _given_host_planes(
    planes: Sequence[torch.Tensor], host_planes: Sequence[torch.Tensor], sub_blocks: int
) -> list[torch.Tensor]:
    """H3: caller-owned host planes match the device planes one to one (count, sub-block
    count, page shape, dtype) and live in host memory."""
    if len(host_planes) != len(planes):
        raise ValueError(f"H3: {len(host_planes)} host plane(s) given for {len(planes)} device plane(s)")
    for index, (dev, host) in enumerate(zip(planes, host_planes)):
        want = (sub_blocks, *dev.shape[1:])
        if tuple(host.shape) != want or host.dtype != dev.dtype or host.device.type != "cpu":
            raise ValueError(
                f"H3: host plane {index} is {tuple(host.shape)} {host.dtype} on {host.device}, "
                f"needs {want} {dev.dtype} on cpu"
            )
    return list(host_planes)


@attrs.define(frozen=True)
class KVBuffers:
    """Device planes over the KV cache, their host planes, and the block geometry."""

    device_planes: list[torch.Tensor]
    host_planes: list[torch.Tensor]
    gpu_block_size: int
    block_size_factor: int
    num_gpu_blocks: int
    num_cpu_blocks: int
    device: torch.device
    pinned: bool

    @property
    def bytes_per_gpu_block(self) -> int:
        """Bytes one GPU block occupies across every plane (all layers, K and V)."""
        return sum(p[0].numel() * p.element_size() for p in self.device_planes)

    def sub_block_view(self, planes: Sequence[int]) -> KVBuffers:
        """The given planes, addressed in GPU-sized sub-blocks (factor 1), sharing memory.

        Offloaded block ``b`` of this buffer is blocks ``b·f … b·f+f−1`` of the view, so
        a caller that has already mapped rows to sub-blocks (``indices.group_rows``: one
        KV cache group's layers) copies exactly those rows through the view (H3).
        """
        chosen = sorted(set(planes))
        if not chosen or chosen[0] < 0 or chosen[-1] >= len(self.device_planes):
            raise ValueError(f"planes={list(planes)} must name some of the {len(self.device_planes)} planes")
        return KVBuffers(
            device_planes=[self.device_planes[i] for i in chosen],
            host_planes=[self.host_planes[i] for i in chosen],
            gpu_block_size=self.gpu_block_size,
            block_size_factor=1,
            num_gpu_blocks=self.num_gpu_blocks,
            num_cpu_blocks=self.num_cpu_blocks * self.block_size_factor,
            device=self.device,
            pinned=self.pinned,
        )

    @classmethod
    def build(
        cls,
        kv_caches: Mapping[str, torch.Tensor],
        layout: KVLayout | str | Mapping[str, KVLayout | str],
        gpu_block_size: int,
        block_size_factor: int,
        num_cpu_blocks: int,
        pin_memory: bool | None = None,
        host_planes: Sequence[torch.Tensor] | None = None,
    ) -> KVBuffers:
        """Validate the geometry, split ``kv_caches`` into planes, allocate host planes.

        Everything is validated before the (possibly huge) host allocation (S4).
        ``host_planes``, when given, are the host planes to use instead of allocating them
        (views into memory the caller owns, e.g. vLLM's shared offload region; H3): one per
        device plane, each ``num_cpu_blocks · f`` sub-blocks of that plane's shape and dtype.
        """
        _positive("gpu_block_size", gpu_block_size)
        factor = _positive("block_size_factor", block_size_factor)
        _positive("num_cpu_blocks", num_cpu_blocks)
        if not kv_caches:
            raise ValueError("kv_caches is empty: nothing to offload")
        layouts = resolve_layouts(kv_caches, layout)
        planes: list[torch.Tensor] = []
        for name, tensor in kv_caches.items():
            planes.extend(kv_planes(tensor, layouts[name], name))
        devices = {p.device for p in planes}
        if len(devices) != 1:
            raise ValueError(f"kv_caches span several devices: {sorted(map(str, devices))}")
        counts = {p.shape[0] for p in planes}
        if len(counts) != 1:
            raise ValueError(f"kv_caches disagree on the number of GPU blocks: {sorted(counts)}")
        device = devices.pop()
        if host_planes is not None:
            given = _given_host_planes(planes, host_planes, num_cpu_blocks * factor)
            pin = bool(pin_memory)
        else:
            pin = device.type == "cuda" if pin_memory is None else pin_memory
            given = [
                torch.empty(
                    (num_cpu_blocks * factor, *p.shape[1:]), dtype=p.dtype, device="cpu", pin_memory=pin
                )
                for p in planes
            ]
        return cls(
            device_planes=planes,
            host_planes=given,
            gpu_block_size=gpu_block_size,
            block_size_factor=factor,
            num_gpu_blocks=counts.pop(),
            num_cpu_blocks=num_cpu_blocks,
            device=device,
            pinned=pin,
        )
