"""Time ``optitree.exact.solve`` in another Python interpreter: the ``--baseline-python`` of the benchmarks.

:class:`Baseline` starts this file as a script under that interpreter, so the engine it times
is whatever optitree that interpreter imports (e.g. a venv with an editable install of an
earlier commit), never this checkout's. The worker runs in a temporary directory (no checkout
on its ``sys.path``), calls ``optitree.exact.warm_up()`` once when its optitree has one (the
numba engine: compilation excluded from its times), then answers one instance at a time. An
instance's arrays travel in a ``.npz`` file, so both engines solve exactly the same data, and
the fit is timed by :func:`best_time`, as the benchmarks time this checkout's engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def run_times(fn, repeats, budget=np.inf):
    """The times of ``fn()`` over ``repeats`` runs, fewer once ``budget`` seconds are spent, and its last output."""
    times, out = [], None
    while len(times) < repeats and sum(times) < budget:
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def best_time(fn, repeats, budget=np.inf):
    """The least time of ``fn()`` over ``repeats`` runs, fewer once ``budget`` seconds are spent; its last output."""
    times, out = run_times(fn, repeats, budget)
    return min(times), out


def same_objective(a, b):
    """Equal objectives, to the last few bits of a float (regression losses may be summed in another order)."""
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


class Baseline:
    """``solve`` of the optitree imported by the interpreter ``python``, in a warmed-up worker process."""

    def __init__(self, python):
        self.tmp = tempfile.TemporaryDirectory()
        self.proc = subprocess.Popen([python, os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=self.tmp.name)
        self.origin = json.loads(self.proc.stdout.readline())["optitree"]  # after its warm-up

    def solve(self, X, y, repeats, budget=np.inf, **kwargs):
        """``{"time", "median", "objective", "status", "bound"}`` of ``solve(X, y, **kwargs)``: the least and
        the median time of ``repeats`` runs (:func:`run_times`)."""
        return self._ask(X, y, repeats, budget, kwargs, fit=False)

    def fit(self, X, y, repeats, **params):
        """The same of ``OptimalTreeClassifier(**params).fit(X, y)`` after an untimed one (objective, bound and
        status: ``result_``'s objective, bound and termination)."""
        return self._ask(X, y, repeats, np.inf, params, fit=True)

    def _ask(self, X, y, repeats, budget, kwargs, fit):
        path = os.path.join(self.tmp.name, "instance.npz")
        np.savez(path, X=X, y=y)
        request = {"data": path, "repeats": repeats, "budget": budget, "kwargs": kwargs, "fit": fit}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the baseline worker died (its traceback is above)")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()
        self.tmp.cleanup()


def serve():
    """The worker: warm up if the engine has ``warm_up``, then one JSON request a line on stdin."""
    import optitree
    from optitree import OptimalTreeClassifier, exact

    if hasattr(exact, "warm_up"):
        exact.warm_up()
    print(json.dumps({"optitree": os.path.dirname(os.path.abspath(optitree.__file__))}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        with np.load(req["data"]) as data:
            X, y = data["X"], data["y"]
        if req.get("fit"):
            fit = lambda: OptimalTreeClassifier(**req["kwargs"]).fit(X, y)  # noqa: E731
            fit()  # a warm-up, untimed
            times, est = run_times(fit, req["repeats"])
            res = est.result_
            status = res.termination
        else:
            times, res = run_times(lambda: exact.solve(X, y, **req["kwargs"]), req["repeats"], req["budget"])
            status = res.status
        print(json.dumps({"time": min(times), "median": float(np.median(times)), "objective": float(res.objective),
                          "status": status, "bound": float(res.bound)}), flush=True)


if __name__ == "__main__":
    serve()
