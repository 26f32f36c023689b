"""Cost models for step stages: from a measured profile or a roofline, and their validation.

`from_profile(DIR)` and `from_roofline(GPU, CONFIG)` give a `CostModel`: the step
cost in the terms a step stage exposes, the KV pool a GPU leaves, and the
engine's limits; `.library()` is the serQ library text (`use` it).
`sq.costs.validate` replays a measured vLLM run against it.
"""
from sq.costs.costmodel import CostModel, from_profile, from_roofline
from sq.costs.gpus import GPUS, gpu
from sq.costs.model import Model, load_model

__all__ = ["CostModel", "from_profile", "from_roofline", "GPUS", "gpu", "Model", "load_model"]
