"""Ctrl-C and the live progress line, as a user at the keyboard meets them.

A fit runs in a subprocess (its own main thread and signal handling); the test sends it SIGINT
as a terminal would and reads what the fit returned. The first SIGINT stops the running stage
(the exact engine through its callback, HiGHS in this process through its interrupt callback,
a forked HiGHS child asked to stop, then killed) and ``fit`` returns the best tree with status
"interrupted"; a second raises KeyboardInterrupt. With ``threads=2`` the engine's workers are native threads
of the fit's process: they end with the fit, whatever ends it.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

from optitree import OptimalTreeClassifier
from optitree._forked import FORK_AVAILABLE
from optitree.pipeline._progress import FitInterrupted, request_stop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import json, os, sys, threading, time, warnings
    import numpy as np
    from sklearn.datasets import load_digits
    import optitree.pipeline._progress
    from optitree import OptimalTreeClassifier
    import optitree.solvers.highs as highs_backend
    sys.path.insert(0, "tests")
    from support.processes import live_children, native_threads

    path, time_limit, verbose, isolate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    threads, linger = int(sys.argv[5]), float(sys.argv[6])
    X, y = load_digits(return_X_y=True)
    if path == "engine":  # the default path: the exact engine alone settles a fit without constraints
        clf = OptimalTreeClassifier(max_depth=4, time_limit=time_limit, verbose=verbose, threads=threads)
    else:  # the MIP alone (no engine): OCT on 400 digits ("mip"), or 200 ("mip-small")
        X, y = (X[:400], y[:400]) if path == "mip" else (X[:200], y[:200])
        clf = OptimalTreeClassifier(max_depth=3, formulation="oct", acceleration="none", time_limit=time_limit,
                                    verbose=verbose)
    if isolate == "always":  # every HiGHS run in a forked child
        highs_backend.ISOLATE_SHARE = highs_backend.FORK_SECONDS = 0.0
    elif isolate == "never":  # every HiGHS run in this process
        highs_backend.ISOLATE_SHARE = float("inf")

    done = threading.Event()
    peak, processes = [0], set()

    def spy():  # with threads > 1: the engine's threads (and any process) seen while the fit runs
        while not done.wait(0.05):
            now = native_threads() - baseline
            if peak[0] < 2 <= now:
                print("STARTED", flush=True)
            peak[0] = max(peak[0], now)
            processes.update(live_children())

    def workers():  # when fit returned or raised: the engine's threads still running, the most seen, processes
        running = native_threads() - baseline
        done.set()
        return {"worker_threads": running, "workers_seen": peak[0], "processes": sorted(processes)}

    baseline = native_threads() + (threads > 1)  # the spy included
    if threads > 1:
        threading.Thread(target=spy, daemon=True).start()
    print("READY", flush=True)
    t0 = time.perf_counter()
    in_fit, report = True, None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf.fit(X, y)
        in_fit = False
        report = workers()
        time.sleep(linger)  # a second Ctrl-C that comes after fit returned is raised here
    except KeyboardInterrupt:
        print(json.dumps({"raised": "KeyboardInterrupt", "seconds": time.perf_counter() - t0, "in_fit": in_fit,
                          **(report or workers())}), flush=True)
        sys.exit(0)
    r = clf.result_
    print(json.dumps({
        **report, "raised": None, "seconds": time.perf_counter() - t0, "status": r.status,
        "proven_optimal": r.proven_optimal, "objective": r.objective, "bound": r.bound, "message": r.message,
        "accuracy": float(clf.score(X, y)), "n_leaves": int(clf.tree_.n_leaves),
        "warned": [str(w.message) for w in caught if issubclass(w.category, optitree.pipeline._progress.FitInterrupted)],
        "isolated": r.options.get("highs_isolated"),
    }), flush=True)
""")


def _run(path, time_limit, *, signals=(), verbose=0, isolate="auto", threads=1, linger=0.0):
    """Start the script, send SIGINT at each of ``signals`` (seconds after READY); its report and stderr.

    The report gains ``after_signal``: seconds from the first SIGINT to the report's arrival.
    With ``threads`` > 1 the times count from the start of the engine's two threads (READY is
    followed by STARTED). ``linger``: seconds the script stays in Python after the fit (where a later SIGINT
    raises KeyboardInterrupt, reported with ``in_fit`` False).
    """
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, path, str(time_limit), str(verbose), isolate,
                             str(threads), str(linger)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    stderr = []
    reader = threading.Thread(target=lambda: stderr.extend(
        (time.perf_counter(), line) for line in proc.stderr), daemon=True)
    reader.start()
    try:
        assert proc.stdout.readline().strip() == "READY"
        if threads > 1:
            started = proc.stdout.readline()
            assert started.strip() == "STARTED", started
        ready = time.perf_counter()
        sent = None
        for at in signals:
            time.sleep(max(0.0, ready + at - time.perf_counter()))
            proc.send_signal(signal.SIGINT)
            sent = sent or time.perf_counter()
        line = proc.stdout.readline()
        arrived = time.perf_counter()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=5)
    assert line, "".join(text for _, text in stderr)[-3000:]
    report = json.loads(line)
    report["after_signal"] = None if sent is None else arrived - sent
    report["started"] = ready
    return report, stderr


def _check_interrupted(report, within=2.0):
    assert report["raised"] is None, report
    assert report["status"] == "interrupted" and report["proven_optimal"] is False, report
    assert report["after_signal"] < within, report  # fit returned within `within` s of the SIGINT
    assert report["warned"] and "interrupted" in report["warned"][0]
    assert report["bound"] is not None and report["bound"] <= report["objective"] + 1e-9
    # a usable tree: it predicts, better than the majority class of 10 digits (about 10 %)
    assert report["n_leaves"] >= 2 and report["accuracy"] > 0.3


def test_first_ctrl_c_stops_the_exact_engine_and_returns_its_best_tree():
    report, _ = _run("engine", 120, signals=[3.0])
    _check_interrupted(report)
    assert "engine" in report["message"]


def _check_workers_ended(report):
    """The fit ran its engine on two native threads, none ran past its end, and it forked no process."""
    assert report["workers_seen"] >= 2, report
    assert report["worker_threads"] == 0, report  # none left when fit returned or raised
    assert report["processes"] == [], report


def test_first_ctrl_c_stops_the_engine_threads_and_returns_their_best_tree():
    report, _ = _run("engine", 60, signals=[1.5], threads=2)
    _check_interrupted(report)
    assert "engine" in report["message"]
    _check_workers_ended(report)


@pytest.mark.parametrize("gap", [0.3, pytest.param(0.05, marks=pytest.mark.slow)])  # 0.05: one native thread was
# still counted at the report in one clean-clone CI run (not seen locally); under investigation
def test_second_ctrl_c_raises_keyboard_interrupt_with_engine_threads(gap):
    # The first SIGINT stops the threads; the second raises KeyboardInterrupt in Python: in fit, or after it
    # when fit had already returned its tree (the script then sleeps, where a SIGINT raises it at once). The
    # process is never killed by the signal, and fit never raises with a thread still running.
    report, _ = _run("engine", 60, signals=[1.5, 1.5 + gap], threads=2, linger=15)
    assert report["raised"] == "KeyboardInterrupt", report
    assert report["after_signal"] < 5.0, report
    _check_workers_ended(report)


WORKER_START = textwrap.dedent("""
    import json, os, signal, threading, time
    from optitree import _forked
    from optitree.pipeline._progress import FitWatch

    announce_r, announce_w = os.pipe()
    die_with_parent = _forked._die_with_parent

    def slow_start():  # in the child, as it starts: a window long enough for a signal to reach it
        die_with_parent()
        os.write(announce_w, b"%d\\n" % os.getpid())
        time.sleep(1.0)

    _forked._die_with_parent = slow_start
    with FitWatch() as watch:  # Ctrl-C handled as in a fit: its handler and wake-up fd installed
        run = threading.Thread(target=_forked.run_forked,
                               args=(lambda send, stop: time.sleep(1.5), lambda m: None, time.perf_counter() + 30))
        run.start()
        child = int(os.read(announce_r, 64))
        os.kill(child, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)
        raised = None
        try:
            while run.is_alive():
                run.join(0.05)
                watch.check()
        except KeyboardInterrupt:
            raised = "KeyboardInterrupt"
        run.join()
    print(json.dumps({"raised": raised, "stop_requested": watch.stop_requested, "abort": watch.abort}))
""")


@pytest.mark.skipif(not FORK_AVAILABLE, reason="forks on Linux only")
def test_a_ctrl_c_reaching_a_forked_child_as_it_starts_is_the_parents_alone():
    """The child of run_forked (an engine worker, a forked HiGHS run) ignores SIGINT from its first instruction:
    the parent's handler never runs in it (it would print the notice again, and Python's C-level handler would
    write to the parent's wake-up fd, so the parent could count one Ctrl-C as two and abort the fit)."""
    done = subprocess.run([sys.executable, "-c", WORKER_START], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"raised": None, "stop_requested": True, "abort": False}
    assert done.stderr.count("interrupt received") == 1, done.stderr


def test_first_ctrl_c_stops_a_highs_solve():  # this model's solve is forked (its presolve is long for HiGHS's clock)
    report, _ = _run("mip", 60, signals=[3.0])
    _check_interrupted(report)


@pytest.mark.slow
def test_first_ctrl_c_stops_an_in_process_highs_solve():
    # HiGHS hears a stop in its callbacks; its presolve calls none, hence a model with a short one. Its root
    # node can also go seconds without one (optitree.solvers.highs): on a faster machine the SIGINT at 3 s
    # came there (nodes 0 on every progress line from 2.3 to 4.8 s) and was heard 2.1 s later
    report, _ = _run("mip-small", 60, signals=[3.0], isolate="never")
    _check_interrupted(report, within=5.0)
    assert report["isolated"] is False


@pytest.mark.slow
def test_first_ctrl_c_stops_a_forked_highs_solve():
    report, _ = _run("mip", 60, signals=[3.0], isolate="always")
    _check_interrupted(report)
    assert report["isolated"] is True


@pytest.mark.slow
@pytest.mark.parametrize("path", ["engine", "mip"])
def test_second_ctrl_c_raises_keyboard_interrupt(path):
    # two signals 0.15 s apart: both may reach the process while it is in one compiled call
    # the first may end the fit before the second comes: the second is then raised after it (linger)
    report, _ = _run(path, 120 if path == "engine" else 60, signals=[3.0, 3.15], linger=15)
    assert report["raised"] == "KeyboardInterrupt", report
    assert report["after_signal"] < 2.0


@pytest.mark.slow
@pytest.mark.parametrize("path", ["engine", "mip"])
def test_verbose_progress_line_at_least_every_two_seconds(path):
    report, stderr = _run(path, 20, verbose=1)
    assert report["status"] != "interrupted"
    lines = [(t, text) for t, text in stderr if " incumbent " in text]
    assert len(lines) >= 8, stderr
    times = [report["started"]] + [t for t, _ in lines]
    gaps = np.diff(times)
    assert gaps.max() < 2.0, (gaps.round(2).tolist(), [text for _, text in lines])
    assert times[-1] - times[0] > 15  # lines all through the fit, not only at its end
    for _, text in lines:  # never a bound above the incumbent or a negative bound (raw solver values)
        fields = text.split()
        bound = fields[fields.index("bound") + 1]
        assert bound == "-" or float(bound) >= 0
    assert ("engine" if path == "engine" else "MIP") in lines[-1][1]


def test_request_stop_ends_a_fit_like_the_first_ctrl_c():
    # in this process: a harness can stop a running fit (e.g. from its SIGTERM handler)
    rng = np.random.RandomState(0)
    X = rng.rand(300, 8)
    y = (rng.rand(300) < 0.5).astype(int)  # noise: no proof within a second
    clf = OptimalTreeClassifier(max_depth=4, time_limit=60)
    timer = threading.Timer(1.0, request_stop)
    timer.start()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y)
    timer.join()
    assert time.perf_counter() - t0 < 10
    assert clf.result_.status == "interrupted" and not clf.result_.proven_optimal
    assert any(issubclass(w.category, FitInterrupted) for w in caught)
    assert clf.predict(X).shape == (300,)
    assert request_stop() is False  # no fit running now


@pytest.mark.slow
def test_request_stop_during_the_root_split_decomposition(monkeypatch):
    # user constraints: the engine runs after the build, then root bounds, then one sub-MIP per root split
    from pyomo.environ import Constraint
    from sklearn.datasets import load_digits

    from optitree.pipeline._engine import ExactStage

    solve = ExactStage.solve

    def brief(self, data, problem, *, time_limit, **kwargs):  # on any machine, no proof of depth 3 in 2 s
        return solve(self, data, problem, time_limit=min(time_limit, 2.0), **kwargs)

    monkeypatch.setattr(ExactStage, "solve", brief)
    X, y = load_digits(return_X_y=True)  # all 1 797 rows: about 10 s for the engine's proof of depth 3

    def harmless(m):
        m.my_rows = Constraint(expr=sum(m.p[k] for k in m.p) >= 0)

    clf = OptimalTreeClassifier(max_depth=3, time_limit=30, constraints=harmless)
    timer = threading.Timer(24.0, request_stop)  # the engine has 2 s, the bounds a share of the rest
    timer.start()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    timer.join()
    assert time.perf_counter() - t0 < 27
    assert clf.result_.status == "interrupted" and not clf.result_.proven_optimal
    assert "interrupted (Ctrl-C) in:" in clf.result_.message
    assert clf.result_.bound <= clf.result_.objective
    assert clf.score(X, y) > 0.3

