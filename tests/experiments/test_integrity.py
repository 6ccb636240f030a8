"""Result directories with integrity: fingerprints, malformed records, plugins opt-in, write errors,
worker death, signals and the parent's death (fault injection, mostly through subprocesses)."""

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from experiments import cli, config, records, runner

PLUGIN = '''
import os
import signal
import time

from sklearn.tree import DecisionTreeClassifier

from experiments.methods import METHODS, Method, Param, _sklearn_tree, register

if os.environ.get("FAULT_PLUGIN_MARKER"):
    open(os.environ["FAULT_PLUGIN_MARKER"], "w").close()


class FaultTree(DecisionTreeClassifier):
    def __init__(self, max_depth=None, random_state=None, delay=0.0, die_seed=-1):
        super().__init__(max_depth=max_depth, random_state=random_state)
        self.delay = delay
        self.die_seed = die_seed

    def fit(self, X, y):
        if self.random_state == self.die_seed:
            os.kill(os.getpid(), signal.SIGKILL)  # what the OS out-of-memory killer does
        time.sleep(self.delay)
        return super().fit(X, y)


if "fault-tree" not in METHODS:
    register(Method(
        "fault-tree", "greedy", "classification", "test method",
        {"delay": Param(float, 0.0), "die_seed": Param(int, -1)},
        lambda p, depth, seed: FaultTree(max_depth=depth, random_state=seed, **p),
        tree_of=_sklearn_tree,
    ))
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "fault_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def grid(path, *, delay=0.0, die_seed=-1, seeds=(0, 1, 2, 3), depths=(1, 2)):
    path.write_text(textwrap.dedent(f"""
        plugins = ["fault_plugin"]
        depths = {list(depths)}
        seeds = {list(seeds)}
        [[datasets]]
        name = "iris"
        [[methods]]
        name = "fault-tree"
        params = {{ delay = {delay}, die_seed = {die_seed} }}
        """))
    return path


def plain_grid(tmp_path, name="g.toml", seeds=(0, 1)):
    path = tmp_path / name
    path.write_text(textwrap.dedent(f"""
        depths = [1]
        seeds = {list(seeds)}
        [[datasets]]
        name = "iris"
        [[methods]]
        name = "sklearn-cart"
        """))
    return path


def children(pid):
    """Pids whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(condition, timeout=60.0, proc=None):
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def start_grid(cfg, out, plugin_dir, *extra):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "experiments", "run", str(cfg), "--out", str(out), "--no-summary", "--allow-plugins",
         *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )


# ---------------------------------------------------------------------------- run ids are stable
def test_run_ids_of_the_shipped_configs_are_pinned():
    """Ids computed before protocols and typed records existed: stored results stay resumable.
    (quick.toml became a cross-validation grid in issue 24: a new experiment with new ids.)"""
    pinned = {
        "uci": (405, "dced57b3f51c01fc", "9b99f8a1bd03008a"),
        "warmstart": (96, "bca95938bbb373c2", "3b8309bca608c3f7"),
    }
    for name, (n, first, last) in pinned.items():
        ids = [r.run_id for r in config.load(cli.QUICK_CONFIG.parent / f"{name}.toml").runs]
        assert (len(ids), ids[0], ids[-1]) == (n, first, last), name


# ---------------------------------------------------------------------------- foreign config
def test_resume_with_another_config_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", str(plain_grid(tmp_path)), "--out", str(out), "--quiet", "--no-summary"]) == 0
    before = {p.name: p.read_bytes() for p in records.iter_record_files(out)}
    other = plain_grid(tmp_path, "other.toml", seeds=(5,))
    assert cli.main(["run", str(other), "--out", str(out), "--resume", "--quiet", "--no-summary"]) == 2
    err = capsys.readouterr().err
    assert "another config" in err and "--out NEW_DIR" in err
    assert {p.name: p.read_bytes() for p in records.iter_record_files(out)} == before
    # the same config (reordered, commented) resumes
    same = tmp_path / "same.toml"
    same.write_text("# same runs\n" + plain_grid(tmp_path).read_text().replace("[0, 1]", "[1, 0]"))
    assert cli.main(["run", str(same), "--out", str(out), "--resume", "--quiet", "--no-summary"]) == 0


def test_directory_without_fingerprint_refuses_foreign_records(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", str(plain_grid(tmp_path)), "--out", str(out), "--quiet", "--no-summary"]) == 0
    grid_json = json.loads((out / "grid.json").read_text())
    del grid_json["fingerprint"]  # as written before fingerprints existed
    (out / "grid.json").write_text(json.dumps(grid_json))
    other = plain_grid(tmp_path, "other.toml", seeds=(5,))
    assert cli.main(["run", str(other), "--out", str(out), "--resume", "--quiet", "--no-summary"]) == 2
    assert "another config" in capsys.readouterr().err


# ---------------------------------------------------------------------------- malformed records
def test_malformed_records_are_reported_and_skipped(tmp_path, capsys):
    cfg = plain_grid(tmp_path, seeds=(0, 1, 2))
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    files = records.iter_record_files(out)
    no_id = json.loads(files[0].read_text())
    del no_id["run_id"]
    files[0].write_text(json.dumps(no_id))
    files[1].write_text("{not json")
    (out / "runs" / "0123456789abcdef.json").write_text(files[2].read_text())  # run_id differs from its name
    capsys.readouterr()
    assert cli.main(["run", str(cfg), "--out", str(out), "--resume", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: skipping malformed record") >= 3
    for reason in ("no run_id", "does not match the file name"):
        assert reason in err
    statuses = records.record_statuses(out)
    assert set(statuses) == {r.run_id for r in config.load(cfg).runs}  # the two broken runs ran again


# ---------------------------------------------------------------------------- plugins need an opt-in
def test_plugins_are_imported_only_with_the_opt_in(plugin, tmp_path, monkeypatch, capsys):
    marker = tmp_path / "imported"
    monkeypatch.setenv("FAULT_PLUGIN_MARKER", str(marker))
    monkeypatch.delitem(sys.modules, "fault_plugin", raising=False)
    cfg = grid(tmp_path / "g.toml", seeds=(0,), depths=(1,))
    with pytest.raises(config.ConfigError, match="--allow-plugins"):
        config.load(cfg)
    assert cli.main(["run", str(cfg), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert cli.main(["list"]) == 0
    assert not marker.exists()
    assert "--allow-plugins" in capsys.readouterr().err
    assert cli.main(["run", str(cfg), "--out", str(tmp_path / "o"), "--quiet", "--no-summary", "--allow-plugins"]) == 0
    assert marker.exists()


# ---------------------------------------------------------------------------- write errors
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_full_disk_or_read_only_directory_mid_run(tmp_path, monkeypatch, capsys, code):
    cfg = plain_grid(tmp_path, seeds=(0, 1, 2, 3))
    out = tmp_path / "out"
    real_mkstemp = records.tempfile.mkstemp
    calls = []

    def failing_mkstemp(*args, **kwargs):  # grid.json and two records fit, then the disk is full
        calls.append(1)
        if len(calls) > 3:
            raise OSError(code, os.strerror(code))
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(records.tempfile, "mkstemp", failing_mkstemp)
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 4
    err = capsys.readouterr().err
    assert os.strerror(code) in err and "intact" in err and "--resume" in err and "Traceback" not in err
    kept = records.load_records(out)
    assert len(kept) == 2 and all(r["status"] == "done" for r in kept)
    assert not list((out / "runs").glob(".tmp-*"))
    monkeypatch.setattr(records.tempfile, "mkstemp", real_mkstemp)
    assert cli.main(["run", str(cfg), "--out", str(out), "--resume", "--quiet", "--no-summary"]) == 0
    assert len(records.load_records(out)) == 4


# ---------------------------------------------------------------------------- worker death
def test_a_worker_killed_by_the_os_fails_its_run_and_the_grid_goes_on(plugin, tmp_path):
    cfg = grid(tmp_path / "g.toml", die_seed=1)
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--n-jobs", "2", "--quiet", "--no-summary",
                     "--allow-plugins"]) == 1
    recs = records.load_records(out)
    assert len(recs) == 8
    dead = [r for r in recs if r["status"] == "failed"]
    assert sorted(r["config"]["seed"] for r in dead) == [1, 1]
    assert all(r["error"]["type"] == "WorkerDied" and "SIGKILL" in r["error"]["message"] for r in dead)
    assert all(r["status"] == "done" for r in recs if r["config"]["seed"] != 1)


def test_workers_end_when_the_parent_is_killed(plugin, tmp_path):
    cfg = grid(tmp_path / "g.toml", delay=60.0)
    proc = start_grid(cfg, tmp_path / "out", plugin, "--n-jobs", "2", "--quiet")
    wait_until(lambda: len(children(proc.pid)) >= 2, proc=proc)
    workers = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not any(alive(w) for w in workers), timeout=20)


@pytest.mark.parametrize("signum,n_jobs", [(signal.SIGTERM, "2"), (signal.SIGINT, "1")])
def test_signals_stop_the_grid_cleanly(plugin, tmp_path, signum, n_jobs):
    cfg = grid(tmp_path / "g.toml", delay=0.3, seeds=tuple(range(4)))
    out = tmp_path / "out"
    proc = start_grid(cfg, out, plugin, "--n-jobs", n_jobs)
    wait_until(lambda: (out / "runs").is_dir() and records.iter_record_files(out), proc=proc)
    workers = children(proc.pid)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    err = err.decode()
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err and f"stopped by {signal.Signals(signum).name}" in err
    wait_until(lambda: not any(alive(w) for w in workers), timeout=10)  # workers (and the resource tracker) end
    kept = records.load_records(out)
    assert 1 <= len(kept) < 8 and all(r["status"] == "done" for r in kept)
    outcome = runner.run_grid(config.load(cfg, allow_plugins=True), out, resume=True, progress=False)
    assert (outcome.skipped, outcome.done, outcome.failed) == (len(kept), 8 - len(kept), 0)
