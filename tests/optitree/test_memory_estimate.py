"""The memory guard's estimate against the measured peak of a real fit (issue 25: it was 2.5-11x the peak).

The fit runs in a fresh process (:func:`benchmarks.memory.measure`); its peak is that
process's RSS plus the private pages of a forked HiGHS child, sampled every 5 ms, above the RSS
before the fit.
"""

import sys

import pytest

from benchmarks.memory import measure


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("case", [("oct", 5000, 3), ("flow", 5000, 3), ("ort", 5000, 3)])
def test_memory_estimate_within_half_of_the_measured_peak(case):
    formulation, n, depth = case
    r = measure(formulation, n, 10, depth)
    assert 0.5 <= r["measured"] / r["estimate"] <= 1.5, r
