"""Where one copy job's time goes on a CUDA device, piece by piece (uva and gather paths).

Device-only (no CPU fallback); run from the repository root on a GPU machine:

    PYTHONPATH=. python3 tools/cuda_copy_breakdown.py

For a Llama-3-8B-shaped KV cache (32 layers, K and V apart, 8 heads x 128, bf16) at
16-token blocks, 8 and 64 blocks per job, it prints the whole job through the handler
(``transfer_async`` + ``wait`` + ``get_finished``), the CPU time of ``transfer_async``
alone and of its validation, the pieces of a uva submit (pinning and uploading the row
ids, the kernel launch), the kernel's own time (CUDA events) and one pinned cudaMemcpy of
the job's bytes (the ceiling of ``kvoffload bench copy``). ``docs/bench/`` holds what it
printed on an H200.
"""
import statistics, time
import numpy as np
import torch
from kvoffload.impl.copy import CpuGpuHandler, KVBuffers, uva
from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec

dev = torch.device("cuda")


def med(fn, n=30, sync=True):
    fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        if sync: torch.cuda.synchronize()
        t0 = time.perf_counter(); fn()
        if sync: torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


for tokens, nb in [(16, 8), (16, 64)]:
    kv = {f"l{i}": torch.randint(-100, 100, (2, nb, tokens, 8, 128), device=dev).to(torch.bfloat16) for i in range(32)}
    b = KVBuffers.build(kv, "kv_blocks", tokens, 1, nb)
    gpu = np.random.default_rng(0).permutation(nb)
    cpu = list(range(nb))
    nbytes = b.bytes_per_gpu_block * nb
    for path in ("uva", "gather"):
        h = CpuGpuHandler(b, "store", path)
        c = iter(range(1 << 40))
        def job():
            j = next(c); h.transfer_async(j, (GPULoadStoreSpec(gpu), CPULoadStoreSpec(cpu))); h.wait({j}); h.get_finished()
        def submit_only():
            j = next(c); h.transfer_async(j, (GPULoadStoreSpec(gpu), CPULoadStoreSpec(cpu)))
        full = med(job)
        torch.cuda.synchronize()
        sub = med(lambda: (submit_only()), sync=False); torch.cuda.synchronize(); h.get_finished()
        chk = med(lambda: h.check(10**9, (GPULoadStoreSpec(gpu), CPULoadStoreSpec(cpu))), sync=False)
        print(f"{path:6} tokens={tokens} blocks={nb} MiB={nbytes/2**20:.0f}: job {full:.0f} us ({nbytes/full/1e3:.1f} GB/s), "
              f"transfer_async CPU {sub:.0f} us, check {chk:.0f} us", flush=True)
    rows = np.stack((gpu, np.arange(nb)))
    pin = med(lambda: torch.from_numpy(rows).pin_memory(), sync=False)
    hi = torch.from_numpy(rows).pin_memory()
    up = med(lambda: hi.to(dev, non_blocking=True), sync=False)
    di = hi.to(dev)
    t = uva.SegmentTable.build(b.device_planes, b.host_planes)
    launch = med(lambda: uva.copy_rows(t, True, di), sync=False)
    torch.cuda.synchronize()
    kern = med(lambda: uva.copy_rows(t, True, di))
    ev = med(lambda: torch.cuda.Event().record(), sync=False)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); uva.copy_rows(t, True, di); e.record(); e.synchronize()
    empty = med(lambda: torch.cuda.synchronize(), sync=False)
    print(f"   pieces: pin_memory {pin:.0f} us, upload issue {up:.0f} us, kernel launch CPU {launch:.0f} us, "
          f"kernel+sync wall {kern:.0f} us, kernel events {s.elapsed_time(e)*1e3:.0f} us, event record {ev:.0f} us, bare sync {empty:.0f} us", flush=True)
    flat = torch.empty(nbytes, dtype=torch.uint8, device=dev); hf = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    cm = med(lambda: hf.copy_(flat, non_blocking=True))
    print(f"   ceiling copy wall {cm:.0f} us ({nbytes/cm/1e3:.1f} GB/s)", flush=True)
    del kv, b, flat, hf

# Can the kernel read the row ids straight from pinned host memory (no upload)?
kv = {f"l{i}": torch.randint(-100, 100, (2, 8, 16, 8, 128), device=dev).to(torch.bfloat16) for i in range(4)}
b = KVBuffers.build(kv, "kv_blocks", 16, 1, 8)
t = uva.SegmentTable.build(b.device_planes, b.host_planes)
rows = torch.from_numpy(np.stack((np.array([5, 2, 7]), np.array([0, 1, 2])))).pin_memory()
try:
    uva.copy_rows(t, True, rows); torch.cuda.synchronize()
    ok = all(torch.equal(h[s].cpu(), p[g].cpu()) for p, h in zip(b.device_planes, b.host_planes) for g, s in [(5, 0), (2, 1), (7, 2)])
    print("pinned host row ids accepted by Triton; correct:", ok)
    t0 = time.perf_counter()
    for _ in range(100):
        uva.copy_rows(t, True, rows)
    torch.cuda.synchronize()
    print(f"   100 launches with host ids: {(time.perf_counter()-t0)*1e4:.0f} us each")
except Exception as exc:
    print("pinned host row ids refused:", type(exc).__name__, str(exc)[:300])
