"""Records written by earlier versions of the harness still read and summarise."""

import json

import pytest

from experiments import cli, records

pytest.importorskip("pandas")

# A FlowOCT record as written before typed records and protocols (environment and worker left out,
# as in records of older versions still).
OLD_FLOW_RECORD = (
    '{"classes":[0,1],"config":{"dataset":{"name":"xor","params":{"n":16}},"dataset_label":"xor","depth":'
    '1,"method":{"name":"flow","params":{"alpha":0.0,"min_samples_leaf":1,"rel_gap":0.0,"solver":"highs",'
    '"start":"cart","threads":1,"time_limit":5.0}},"method_label":"flow","seed":0,"split":{"stratify":tru'
    'e,"test_size":0.25,"validation_size":0.0}},"data":{"n_classes":2,"n_features":2,"n_test":4,"n_train"'
    ':12,"n_validation":null,"stratified":true},"duration":0.029576615000223683,"error":null,"execution":'
    '{"backend":"loky","force_single_thread":false,"n_jobs":1,"params":{"alpha":0.0,"min_samples_leaf":1,'
    '"rel_gap":0.0,"solver":"highs","start":"cart","threads":1,"time_limit":5.0},"scheduler":null,"thread'
    's_forced":false},"finished":"2026-11-23T23:21:19.028245+00:00","format":"optitree.experiments.record'
    '/1","init_tree":{"children_left":[1,-1,-1],"children_right":[2,-1,-1],"feature":[0,-2,-2],"impurity"'
    ':[0.48611111111111105,0.0,0.0],"n_features":2,"n_node_samples":[12,7,5],"task":"classification","thr'
    'eshold":[0.5353309128386983,null,null],"value":[[5.0,7.0],[0.0,7.0],[5.0,0.0]],"weighted_n_node_samp'
    'les":[12.0,7.0,5.0]},"kind":"mip","metrics":{"depth":1,"fit_time":0.025793110000449815,"n_fit":12,"n'
    '_leaves":2,"test_accuracy":0.5,"train_accuracy":1.0},"run_id":"e06e1e216440df3a","solver":{"bound":0'
    '.0,"build_time":0.0018228349999844795,"gap":0.0,"n_cols":125,"n_integer":53,"n_nonzeros":356,"n_rows'
    '":124,"nodes":1,"objective":0.0,"options":{"node_limit":null,"random_seed":0,"rel_gap":0.0,"threads"'
    ':1,"time_limit":5.0,"verbose":false},"proven_optimal":true,"solve_time":0.00815851900006237,"solver"'
    ':"highs","start_accepted":true,"start_objective":0.0,"start_source":"cart","status":"optimal","trace'
    '":[{"bound":0.0,"event":"start","gap":1.0,"incumbent":2.220446049250313e-16,"nodes":0,"time":0.00393'
    '7704000236408},{"bound":0.0,"event":"progress","gap":0.0,"incumbent":0.0,"nodes":0,"time":0.00402704'
    '69999086345}],"versions":{"HiGHS":"1.16.0 (f3f113d)","highspy":"1.16.0","numpy":"2.4.6","optitree":"'
    '0.1.0","python":"3.11.7"}},"started":"2026-11-23T23:21:18.998663+00:00","status":"done","task":"clas'
    'sification","tree":{"children_left":[1,-1,-1],"children_right":[2,-1,-1],"feature":[0,-2,-2],"impuri'
    'ty":[0.48611111111111105,0.0,0.0],"n_features":2,"n_node_samples":[12,7,5],"task":"classification","'
    'threshold":[0.5353309128386983,null,null],"value":[[5.0,7.0],[0.0,7.0],[5.0,0.0]],"weighted_n_node_s'
    'amples":[12.0,7.0,5.0]}}'
)


def test_old_records_summarise(tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    old = json.loads("".join(OLD_FLOW_RECORD))
    (runs / f"{old['run_id']}.json").write_text(json.dumps(old))
    failed = {"format": old["format"], "run_id": "00000000000000aa", "status": "failed",
              "config": {**old["config"], "seed": 1}, "error": {"type": "RuntimeError", "message": "boom"},
              "legacy_key": 1}
    (runs / "00000000000000aa.json").write_text(json.dumps(failed))
    (rec_old, rec_failed) = sorted(records.load_run_records(tmp_path), key=lambda r: r.status)
    assert rec_old.solver["proven_optimal"] is True and rec_old.metrics["train_accuracy"] == 1.0
    assert rec_failed.metrics is None and rec_failed.error["message"] == "boom"
    assert cli.main(["summarize", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| xor | 1 | flow | 1 | 1.000 | 0.500 | 1/1 |" in out
    assert "RuntimeError: boom" in out
