"""One vLLM generation run for the lane's end-to-end test (a script: vLLM spawns worker
processes, so this needs its own ``__main__``).

    python tests/vllm_lane/e2e_generate.py MODEL_DIR OUT_JSON --offload {on,off,disk,redis} [--num-gpu-blocks N]

Builds ``LLM`` on the tiny random model, with kvoffload's spec behind vLLM's
``OffloadingConnector`` (``--offload on``), with vLLM's tiering behind the connector
(``--offload disk``: ``KVOffloadTieringSpec``, a CPU primary tier of ``--cpu-bytes`` and
our disk tier of ``--disk-blocks`` chunks in the file ``--disk-path``; the primary tier is
our manager or vLLM's, ``--primary-tier``), the same with our Redis tier (``--offload redis``:
``--redis-url``, ``--disk-blocks`` chunks) or without a connector (``off``), and runs the
prompt set one request at a time: A, B, C (200 tokens each; A and B share a 64-token
prefix) then A and B again. A device cache of 12 blocks of 32 tokens (the default; a
model with two KV cache groups needs 20, shared by both groups) holds about one prompt, so the repeats find their prefix evicted from the device and offloaded to host
memory. Writes ``{"outputs": [[token ids] per request]}``. ``KVOFFLOAD_VLLM_LOG`` and
``KVOFFLOAD_VLLM_CORRUPT_LOADS`` pass through the environment to the engine processes.
"""

from __future__ import annotations

import argparse
import json
import random

BLOCK = 32
PROMPT_LEN = 200
SHARED = 64


def prompt_set(seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    tokens = lambda n: [rng.randrange(1, 500) for _ in range(n)]  # noqa: E731
    shared = tokens(SHARED)
    a = shared + tokens(PROMPT_LEN - SHARED)
    b = shared + tokens(PROMPT_LEN - SHARED)
    c = tokens(PROMPT_LEN)
    return [a, b, c, a, b]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--offload", choices=["on", "off", "disk", "redis"], default="on")
    parser.add_argument("--cpu-bytes", type=int, default=64 * 32768)
    parser.add_argument("--eviction-policy", default="lru")
    parser.add_argument("--num-gpu-blocks", type=int, default=12)
    parser.add_argument("--disk-path", default="")
    parser.add_argument("--disk-blocks", type=int, default=64)
    parser.add_argument("--primary-tier", choices=["kvoffload", "vllm"], default="kvoffload")
    parser.add_argument("--redis-url", default="")
    args = parser.parse_args()

    from vllm import LLM, SamplingParams
    from vllm.config import KVTransferConfig

    kwargs: dict[str, object] = {}
    if args.offload != "off":
        extra: dict[str, object] = {
            "spec_name": "KVOffloadingSpec",
            "spec_module_path": "kvoffload.impl.vllm",
            "cpu_bytes_to_use": args.cpu_bytes,
            "eviction_policy": args.eviction_policy,
            "block_size": BLOCK,
        }
        if args.offload in ("disk", "redis"):
            extra["spec_name"] = "KVOffloadTieringSpec"
            extra["primary_tier"] = args.primary_tier
            tier: dict[str, object] = {"module_path": "kvoffload.impl.vllm.tiers", "num_blocks": args.disk_blocks}
            if args.offload == "disk":
                tier.update(type="KVOffloadDiskTier", path=args.disk_path)
            else:
                tier.update(type="KVOffloadRedisTier", url=args.redis_url)
            extra["secondary_tiers"] = [tier]
        kwargs["kv_transfer_config"] = KVTransferConfig(
            kv_connector="OffloadingConnector", kv_role="kv_both", kv_connector_extra_config=extra
        )
    llm = LLM(
        model=args.model,
        skip_tokenizer_init=True,
        dtype="float32",
        enforce_eager=True,
        seed=0,
        block_size=BLOCK,
        max_model_len=256,
        num_gpu_blocks_override=args.num_gpu_blocks,
        enable_prefix_caching=True,
        **kwargs,
    )
    params = SamplingParams(max_tokens=8, temperature=0, detokenize=False, ignore_eos=True)
    outputs = []
    for prompt in prompt_set():
        (result,) = llm.generate([{"prompt_token_ids": prompt}], params, use_tqdm=False)
        outputs.append(list(result.outputs[0].token_ids))
    with open(args.out, "w") as handle:
        json.dump({"outputs": outputs}, handle)


if __name__ == "__main__":
    main()
