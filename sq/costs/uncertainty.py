"""A cost model's coefficients as distributions: draws, and capacity answers over draws.

Each fit keeps its coefficients' covariance (sq.costs.fit); a draw takes every
part's coefficients jointly from the normal distribution with that mean and
covariance. A program that `use`s the model's library gets a draw as `defs`
(the library's coefficients are `def`s), so a study can give each seed its own
draw, and a capacity answer widens by what the profile leaves unknown, not
only by seed noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sq.costs.costmodel import CostModel


def coefficient_draw(cm: CostModel, seed: int) -> dict[str, float]:
    """{def name: value}: every fitted coefficient drawn once, each fit's jointly (seeded)."""
    rng = np.random.default_rng(seed)
    out = {}
    for prefix, fit in cm.parts():
        values = rng.multivariate_normal(fit.coef, fit.cov, method="eigh")
        out.update({prefix + name: float(v) for name, v in zip(fit.names, values)})
    return out


def draw_defs(cm: CostModel, seed: int) -> dict[str, str]:
    """The draw of `seed` as `defs` for sq.compile (every digit kept)."""
    return {name: repr(value) for name, value in coefficient_draw(cm, seed).items()}


@dataclass
class CapacitySpread:
    """One capacity search per draw of the cost coefficients."""
    draws: list[int]
    answers: list          # Capacity records, in draw order

    @property
    def values(self) -> np.ndarray:
        return np.array([np.nan if a.value is None else a.value for a in self.answers], dtype=float)

    def line(self) -> str:
        v = self.values
        return (f"capacity over {len(v)} cost draws: min {np.nanmin(v):.4g}, median {np.nanmedian(v):.4g}, "
                f"max {np.nanmax(v):.4g}")


def capacity_over_draws(program_path, cm: CostModel, knob: str, slo, *, draws=range(1, 9), sets=None, **kwargs):
    """sq.capacity of the program at `program_path` (which `use`s `cm`'s library) once per draw."""
    from sq.frontend.compile import compile_program
    from sq.study.capacity import capacity
    answers = []
    for d in draws:
        program = compile_program(program_path, sets=sets, defs=draw_defs(cm, d))
        answers.append(capacity(program, knob, slo, **kwargs))
    return CapacitySpread(list(draws), answers)
