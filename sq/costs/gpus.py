"""Datasheet figures of common GPUs: the inputs of a roofline.

One row per GPU: dense bf16 tensor throughput (no sparsity), HBM/GDDR
bandwidth, memory size, the interconnect between two GPUs, and where the
figures come from. Peak figures are the vendor's; nothing here is measured.
A roofline multiplies them by efficiency factors (sq.costs.roofline).
"""
from __future__ import annotations

from dataclasses import dataclass

from sq.errors import SqError


@dataclass(frozen=True)
class Gpu:
    name: str
    bf16_tflops: float      # dense, no structured sparsity
    fp8_tflops: float       # dense; 0 where the GPU has no fp8 tensor cores
    mem_bw_gbs: float       # GB/s (10^9 bytes per second)
    mem_gb: float           # GB as the datasheet writes it
    link_gbs: float         # GPU-to-GPU, one direction, GB/s (NVLink, else PCIe)
    source: str

    def peak_flops(self, dtype: str) -> float:
        if dtype == "fp8":
            if not self.fp8_tflops:
                raise SqError(f"the {self.name} has no fp8 tensor cores in sq's GPU table", phase="settings")
            return self.fp8_tflops * 1e12
        return self.bf16_tflops * 1e12


GPUS = {g.name: g for g in (
    Gpu("A100", 312, 0, 2039, 80, 300, "NVIDIA A100 datasheet (SXM4 80GB): 312 TF bf16, 2039 GB/s, NVLink 600 GB/s bidir."),
    Gpu("H100", 989, 1979, 3350, 80, 450, "NVIDIA H100 datasheet (SXM5): 989 TF bf16, 1979 TF fp8, 3.35 TB/s, NVLink 900 GB/s bidir."),
    Gpu("H200", 989, 1979, 4800, 141, 450, "NVIDIA H200 datasheet (SXM): 989 TF bf16, 4.8 TB/s, 141 GB, NVLink 900 GB/s bidir."),
    Gpu("B200", 2250, 4500, 8000, 180, 900, "NVIDIA DGX B200 datasheet, per GPU: 2.25 PF bf16 dense, 8 TB/s, NVLink 1.8 TB/s bidir."),
    Gpu("L40S", 362, 733, 864, 48, 32, "NVIDIA L40S datasheet: 362 TF bf16 dense, 733 TF fp8, 864 GB/s, PCIe Gen4 x16."),
    Gpu("L4", 121, 242, 300, 24, 32, "NVIDIA L4 datasheet: 121 TF bf16 dense, 242 TF fp8, 300 GB/s, PCIe Gen4 x16."),
    Gpu("RTX4090", 165, 330, 1008, 24, 32, "NVIDIA Ada Lovelace whitepaper (RTX 4090): 165 TF bf16 dense (fp32 accumulate), 1008 GB/s, PCIe Gen4 x16."),
    Gpu("RTXPRO6000", 500, 1000, 1792, 96, 64, "NVIDIA RTX PRO 6000 Blackwell datasheet: ~500 TF bf16 dense (half of 4 PF fp4 sparse / 4), 1792 GB/s, PCIe Gen5 x16."),
)}

_ALIASES = {"RTX 4090": "RTX4090", "RTX PRO 6000": "RTXPRO6000", "4090": "RTX4090"}


def gpu(name: str) -> Gpu:
    """The table's row for `name` (case and spaces ignored), or an SqError listing the table."""
    key = name.strip()
    key = _ALIASES.get(key, key)
    for known in GPUS:
        if known.replace(" ", "").lower() == key.replace(" ", "").lower():
            return GPUS[known]
    raise SqError(f"unknown GPU `{name}`; sq's table has: {', '.join(GPUS)}", phase="settings")
