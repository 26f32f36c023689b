"""Weighted least squares with the coefficients' uncertainty and the fit's residuals.

The profiles span four orders of magnitude (a 9 µs decode kernel, a 5 ms
long-context one), so the fits minimise *relative* residuals (weights 1/y):
an absolute fit would leave the small, frequent decode steps badly off.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    names: tuple[str, ...]
    coef: np.ndarray        # the fitted coefficients, in `names`' order
    stderr: np.ndarray      # their standard errors (from the weighted residual variance)
    cov: np.ndarray         # their covariance matrix
    mape: float             # mean |predicted/measured - 1| over the rows fitted
    max_ape: float
    rows: int

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X @ self.coef


def wls(X: np.ndarray, y: np.ndarray, names: tuple[str, ...]) -> Fit:
    """Least squares of y on the columns of X with weights 1/y (relative residuals)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    w = 1.0 / y
    Xw, yw = X * w[:, None], y * w
    coef, *_ = np.linalg.lstsq(Xw, yw, rcond=None)
    resid = yw - Xw @ coef
    dof = max(1, len(y) - X.shape[1])
    sigma2 = float(resid @ resid) / dof
    cov = sigma2 * np.linalg.pinv(Xw.T @ Xw)
    ape = np.abs(X @ coef / y - 1.0)
    return Fit(names, coef, np.sqrt(np.maximum(np.diag(cov), 0.0)), cov, float(ape.mean()), float(ape.max()), len(y))


def hinge_basis(x: np.ndarray, knots: tuple[float, ...]) -> np.ndarray:
    """Columns 1, x, max(0, x - k) for each knot: a continuous piecewise-linear curve."""
    x = np.asarray(x, dtype=float)
    return np.column_stack([np.ones_like(x), x] + [np.maximum(0.0, x - k) for k in knots])


def hinge_fit(x: np.ndarray, y: np.ndarray, candidates: tuple[float, ...], most: int = 3) -> tuple[Fit, tuple]:
    """A piecewise-linear fit of y(x) whose knots are picked greedily from `candidates`
    (each added knot the one that lowers the relative error most), at most `most` of them."""
    knots: tuple = ()
    best = wls(hinge_basis(x, knots), y, _hinge_names(knots))
    for _ in range(most):
        trials = [(wls(hinge_basis(x, tuple(sorted(knots + (k,)))), y, ()), k) for k in candidates if k not in knots]
        if not trials:
            break
        fit, k = min(trials, key=lambda t: t[0].mape)
        if fit.mape > 0.98 * best.mape:     # a knot must earn its place
            break
        knots = tuple(sorted(knots + (k,)))
        best = wls(hinge_basis(x, knots), y, _hinge_names(knots))
    return best, knots


def _hinge_names(knots: tuple) -> tuple[str, ...]:
    return ("base", "slope") + tuple(f"above_{k:g}" for k in knots)
