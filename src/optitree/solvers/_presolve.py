"""When HiGHS may presolve a MIP: the rule and the measurements behind it.

Presolve rule (:func:`presolve_setting`): HiGHS's MIP presolve runs dominated-column
detection (``HPresolve::dominatedColumns``), which checks no clock and which
``presolve_rule_off`` cannot switch off (it is below ``kPresolveRuleFirstAllowOff``), and
probing, which checks the clock once per probed binary. On FlowOCT without the exact engine
(breast_cancer, depth 2, 10 s limit; HiGHS 1.16, 2 shared cores) the run stopped after 14.7 s
by default, 11.8 s with probing off (``presolve_rule_off`` bit 15: dominated columns then
took 10.5 s), 19.4 s with aggregator, parallel rows/columns and sparsify off (probing then
overran), and 14.6-14.8 s with enumeration or dependent equations off. Only
``presolve="off"`` bounds the time, so the rule chooses between HiGHS's default
(``"choose"``) and ``"off"``: presolve is switched off when its predicted time exceeds
``PRESOLVE_SHARE`` (half) of the run's time limit; without a limit, or with presolve not
requested (:attr:`SolveOptions.presolve` False, e.g. the decomposition's small sub-MIPs), it
never switches presolve on or off. The choice is recorded in ``result.options["highs_presolve"]``,
and a rule-made ``"off"`` in a note of ``result.message``.

The prediction, :func:`predicted_presolve_time`, is ``1.6 s * (work / 1e5) ** 1.22`` with
``work = columns * non-zeros / rows`` (columns times the mean row length), a least-squares
fit of the time from ``run()`` to the first MIP callback (presolve and setup, no time limit)
over 19 FlowOCT, OCT and OCT-H models; the measured time was 0.71-1.64x the prediction (a fit
on non-zeros alone left residuals 3.6x wider, on rows alone 2x). Measured, a subset
(seconds to the first MIP callback with presolve and without, in fits with the CART start,
whose completing LP is included):

==============================  ================================  ========  =====
model                           rows, columns, non-zeros           presolve  off
==============================  ================================  ========  =====
FlowOCT d=2 wine                7 363, 10 098, 42 952              0.70      0.04
FlowOCT d=2 digits[:300]        8 159, 8 567, 116 191              1.82      0.08
FlowOCT d=2 digits[:600]        14 330, 13 109, 235 861            6.72      0.17
FlowOCT d=2 breast_cancer       57 324, 99 847, 359 266            13.4      0.36
FlowOCT d=2 generated n=1000    79 954, 133 901, 459 498           21.4      0.59
FlowOCT d=2 generated n=2000    159 954, 267 901, 919 498          72.5      1.37
FlowOCT d=3 wine                16 703, 23 082, 99 276             1.70      0.11
FlowOCT d=3 digits[:600]        31 834, 28 973, 547 137            8.01      0.41
FlowOCT d=3 breast_cancer       132 236, 231 455, 835 258          32.8      1.02
OCT d=2 breast_cancer           7 437, 2 400, 159 083              0.51      0.05
OCT d=2 digits[:600]            7 904, 2 690, 244 805              1.60      0.07
OCT d=3 breast_cancer           18 865, 4 832, 463 467             2.00      0.14
OCT d=3 digits[:600]            20 016, 5 446, 719 629             4.39      0.23
OCT-H d=2 digits[:600]          8 615, 3 074, 185 752              0.93      0.30
==============================  ================================  ========  =====

(generated: ``make_classification(n, 20 features, 6 informative, random_state=0)``; OCT
with ``feature_scaling="rank"``.) ``python -m benchmarks.time_limit --presolve``
repeats these measurements on the bare models (no start); a repeat while another heavy process
shared the machine measured 0.69-1.76x the prediction (FlowOCT d=2 generated n=2000: 79.0 s,
digits[:600]: 7.1 s). With that worst case, a presolve allowed by the rule ends by 88 % of
the limit.
"""

from __future__ import annotations


__all__ = ["PRESOLVE_SHARE", "predicted_presolve_time", "presolve_setting"]

#: HiGHS's MIP presolve time predicted from the model's size: with ``work = n_cols * n_nonzeros /
#: n_rows`` (columns times the mean row length), ``PRESOLVE_SECONDS * (work / PRESOLVE_WORK) **
#: PRESOLVE_EXPONENT`` seconds, a least-squares fit of log time on log work over the measured
#: models (module docstring), which took at most 1.76x the prediction.
PRESOLVE_SECONDS = 1.6
PRESOLVE_WORK = 100_000
PRESOLVE_EXPONENT = 1.22
#: Presolve runs when its predicted time is at most this share of the time limit: the slowest
#: measured presolve (1.76x its prediction) then ends by 88 % of the limit.
PRESOLVE_SHARE = 0.5


def predicted_presolve_time(n_rows: int, n_cols: int, n_nonzeros: int) -> float:
    """Predicted seconds of HiGHS's MIP presolve for a model of the given size.

    Parameters
    ----------
    n_rows, n_cols, n_nonzeros : int
        Rows, columns and non-zeros of the constraint matrix.

    Returns
    -------
    float
        ``PRESOLVE_SECONDS * (work / PRESOLVE_WORK) ** PRESOLVE_EXPONENT`` with
        ``work = n_cols * n_nonzeros / n_rows``; 0 for a model without rows.
    """
    if n_rows <= 0:
        return 0.0
    work = n_cols * n_nonzeros / n_rows
    return PRESOLVE_SECONDS * (work / PRESOLVE_WORK) ** PRESOLVE_EXPONENT


def presolve_setting(presolve: bool, n_rows: int, n_cols: int, n_nonzeros: int, time_limit: float | None) -> str:
    """HiGHS's ``presolve`` option for a run: ``"choose"`` (HiGHS's default) or ``"off"``.

    Parameters
    ----------
    presolve : bool
        Whether presolve is requested (:attr:`SolveOptions.presolve`); False always gives ``"off"``.
    n_rows, n_cols, n_nonzeros : int
        Rows, columns and non-zeros of the model.
    time_limit : float or None
        The run's time limit in seconds; None keeps HiGHS's default.

    Returns
    -------
    str
        ``"off"`` when presolve is not requested, or when its predicted time
        (:func:`predicted_presolve_time`) exceeds ``PRESOLVE_SHARE`` of ``time_limit``: parts of
        HiGHS's presolve check no clock, so such a run would overshoot the limit; ``"choose"``
        otherwise.
    """
    if not presolve:
        return "off"
    if time_limit is not None and (
        predicted_presolve_time(n_rows, n_cols, n_nonzeros) > PRESOLVE_SHARE * time_limit
    ):
        return "off"
    return "choose"
