"""A small grid on a loopback Dask LocalCluster gives the same records as a serial run."""

import os
import textwrap

import pytest

from experiments import cli, records

distributed = pytest.importorskip("distributed")

GRID = """
name = "dask-grid"
depths = [2]
seeds = [0, 1]

[[datasets]]
name = "xor"
params = { n = 16 }

[[datasets]]
name = "parity"
params = { k = 2, n_irrelevant = 2 }

[[methods]]
name = "cart"

[[methods]]
name = "flow"
params = { start = "cold", time_limit = 20.0, node_limit = 20, threads = 2 }
"""


def failures(out):
    return [r["error"] for r in records.load_records(out) if r["status"] != "done"]


def by_id(out):
    return {r["run_id"]: r for r in records.load_records(out)}


def test_grid_on_a_local_dask_cluster(tmp_path):
    cfg = tmp_path / "grid.toml"
    cfg.write_text(textwrap.dedent(GRID))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        argv = ["run", str(cfg), "--out", str(tmp_path / "dask"), "--backend", "dask"]
        rc = cli.main(argv + ["--scheduler", cluster.scheduler_address, "--quiet", "--no-summary"])
        assert rc == 0, failures(tmp_path / "dask")
    rc = cli.main(["run", str(cfg), "--out", str(tmp_path / "serial"), "--quiet", "--no-summary"])
    assert rc == 0, failures(tmp_path / "serial")

    dask_runs, serial_runs = by_id(tmp_path / "dask"), by_id(tmp_path / "serial")
    assert len(dask_runs) == 8 and dask_runs.keys() == serial_runs.keys()
    for rid, rec in dask_runs.items():
        assert rec["status"] == "done", rec["error"]
        assert rec["execution"]["backend"] == "dask" and rec["execution"]["force_single_thread"]
        assert rec["worker"]["pid"] != os.getpid()
        serial = serial_runs[rid]
        if rec["config"]["method"]["name"] == "cart":
            assert rec["tree"] == serial["tree"] and rec["metrics"]["train_accuracy"] == serial["metrics"]["train_accuracy"]
        else:
            assert rec["execution"]["params"]["threads"] == 1 and rec["execution"]["threads_forced"]
            assert rec["solver"]["options"]["threads"] == 1
            assert serial["solver"]["options"]["threads"] == 2  # serial runs keep the configured threads
            assert rec["solver"]["trace"]
