"""The promise of a capacity verdict, measured: on models with known answers a point is judged
wrongly at most (1 - confidence) / 2 of the time on either side, at the bound and near it,
with one condition or two (issue 23). The long runs are slow; docs/guide.md shows their figures
(`python tests/helpers/capacity_calibration.py 200`)."""
from __future__ import annotations

import pytest

from tests.helpers.capacity_calibration import MODELS, TWO, binomial_upper, positions, verdicts
from sq.study.capacity import look_level, level_shares, planned_looks, horizon_levels

NOMINAL = (1 - 0.95) / 2      # the promise at the default confidence, for either wrong side


def test_the_error_is_spent_over_looks_levels_and_conditions():
    assert planned_looks(10, 40) == 3 and planned_looks(10, 10) == 1 and planned_looks(3, 10) == 3
    assert horizon_levels(16) == [1, 4, 16] and horizon_levels(1) == [1] and horizon_levels(10) == [1, 4]
    assert level_shares(1) == [1.0] and sum(level_shares(3)) == pytest.approx(1.0)
    # Bonferroni: 3 looks at 2 conditions with 3/4 of 5 % leave 0.625 % to each interval
    assert look_level(0.95, 3, 2, 0.75) == pytest.approx(1 - 0.05 * 0.75 / 6)


def test_a_point_at_its_bound_is_rarely_called_met():
    # a small version of the slow test below: M/M/1 at the bound, 20 repetitions on fresh seeds;
    # the count allowed is the binomial's 99.9 % quantile at the nominal rate
    got = verdicts("M/M/1", 0.5, 2.0, 20)
    assert got["meets"] <= binomial_upper(20, NOMINAL), got
    assert got["violates"] <= binomial_upper(20, NOMINAL), got


@pytest.mark.slow
@pytest.mark.parametrize("model", list(MODELS))
def test_wrong_verdicts_at_and_near_the_bound_are_within_the_promise(model):
    reps = 200
    seen: dict = {}
    for where, x, bound, wrong in positions(model):
        got = seen.setdefault((x, bound), verdicts(model, x, bound, reps, first=5000))
        assert got[wrong] <= binomial_upper(reps, NOMINAL), (where, got)


@pytest.mark.slow
def test_two_conditions_at_their_bounds_are_rarely_called_violated():
    reps = 200
    got = verdicts("M/M/1", 0.5, 2.0, reps, first=5000, extra_slo=TWO)
    assert got["violates"] <= binomial_upper(reps, NOMINAL), got
