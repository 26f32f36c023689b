"""The KV pool a GPU leaves: vLLM's block count from memory, `mem_util` and the model.

vLLM gives the KV cache what is left of `gpu_memory_utilization` x the GPU's
memory after the weights and the peak of a profiling forward pass (the
activations of `max_num_batched_tokens` tokens, the logits of `max_num_seqs`
sequences) and the memory outside PyTorch (CUDA context, cuBLAS/NCCL
workspaces, CUDA graphs). That last part is not knowable from a datasheet:
NON_TORCH_BYTES is a round estimate, and a run's recorded block count
(vLLM's `num_gpu_blocks`) replaces the whole estimate when there is one.
"""
from __future__ import annotations

from dataclasses import dataclass

from sq.costs.model import DTYPE_BYTES, Model

BLOCK = 16                     # tokens per KV block (vLLM's default block size)
NON_TORCH_BYTES = 0.9e9        # CUDA context, library workspaces and CUDA graphs (estimate)
DRIVER_RESERVED = 2**29        # of a datasheet's memory size, what the driver keeps (0.5 GiB)


def datasheet_bytes(mem_gb: float) -> float:
    """The memory PyTorch sees on a card sold as `mem_gb` GB (binary gigabytes, less the driver's)."""
    return mem_gb * 2**30 - DRIVER_RESERVED


@dataclass(frozen=True)
class KvPool:
    blocks: int
    block: int
    bytes_per_token: int
    how: str                   # where the block count comes from, for the library's comment

    @property
    def tokens(self) -> int:
        return self.blocks * self.block


def activation_bytes(model: Model, max_batched_tokens: int, max_num_seqs: int, dtype: str, tp: int) -> int:
    b = DTYPE_BYTES[dtype]
    width = model.intermediate or model.top_k * model.expert_intermediate
    per_token = (4 * model.hidden + 2 * width // tp) * b
    return max_batched_tokens * per_token + max_num_seqs * model.vocab * 4     # logits in fp32


def kv_pool(model: Model, memory_bytes: float, mem_util: float, max_batched_tokens: int, max_num_seqs: int,
            dtype: str = "bf16", tp: int = 1, block: int = BLOCK) -> KvPool:
    per_token = model.kv_bytes_per_token(dtype, tp)
    free = (memory_bytes * mem_util - model.weight_bytes(dtype, tp) - NON_TORCH_BYTES
            - activation_bytes(model, max_batched_tokens, max_num_seqs, dtype, tp))
    blocks = max(0, int(free // (per_token * block)))
    how = (f"{memory_bytes / 2**30:.1f} GiB x mem_util {mem_util:g} - weights {model.weight_bytes(dtype, tp) / 1e9:.2f} GB"
           f" - activations and non-torch memory (estimated), at {per_token} B/token")
    return KvPool(blocks, block, per_token, how)


def recorded_pool(model: Model, blocks: int, dtype: str = "bf16", tp: int = 1, block: int = BLOCK) -> KvPool:
    return KvPool(int(blocks), block, model.kv_bytes_per_token(dtype, tp), "the run's recorded num_gpu_blocks")
