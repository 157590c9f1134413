"""The plain_learner table (analysis/report/speed/plain_learner.py): the suite's learner against a
practitioner's, each set against the suite's at the same network and batch, and the ceiling each
puts on a run at utd 0.25; the threads figure never takes these runs."""

import json

from analysis.io.load import load_runs
from analysis.report.speed import plain_learner, threads
from tests.synthetic_runs import write_run

US = {("cartpole_mlp", True, "fused"): 400.0, ("cartpole_mlp", False, "fused"): 600.0,
      ("cartpole_mlp", False, "torch"): 800.0, ("minatar_conv", True, "fused"): 2_000.0,
      ("minatar_conv", True, "torch"): 2_500.0}


def _timing_run(store, run_id, network, fast, optimizer, us):
    run = {"experiment": {"name": "update_timing"}, "status": "COMPLETED", "start_time": "2024-01-01T00:00:00",
           "host": {"cpu": "synthetic"}, "meta": {},
           "result": {"network": network, "batch_size": 32, "device": "cpu", "torch_threads": 1,
                      "update_us_median": us, "update_us_p10": us, "update_us_p90": us}}
    write_run(str(store), run_id, config={"network": network, "batch_size": 32, "torch_threads": 1,
                                          "mlp_fast_grad": fast, "optimizer": optimizer}, run_json=json.dumps(run))


def test_each_learner_is_set_against_the_suites_with_its_ceiling(tmp_path):
    for i, ((network, fast, optimizer), us) in enumerate(US.items()):
        for seed, jitter in ((101, 0.0), (102, 10.0)):
            _timing_run(tmp_path, f"plain_learner-{i}{seed}", network, fast, optimizer, us + jitter)
    _timing_run(tmp_path, "threads-1", "cartpole_mlp", True, "fused", 100.0)
    rs = load_runs([str(tmp_path)])
    made = plain_learner.data(rs, [].append)
    [(name, table, caption)] = made.tables
    rows = {(r["network, batch"], r["learner"]): r for r in table.to_dict("records")}
    practitioner = rows[("cartpole_mlp, 32", "autograd, torch.optim.Adam")]
    assert practitioner["x the suite's"] == f"{805 / 405:.2f}" and practitioner["runs"] == 2
    assert practitioner["ceiling at utd 0.25: env steps/s"] == f"{1e6 / (0.25 * 805):,.0f}"
    assert rows[("minatar_conv, 32", "autograd, torch.optim.Adam")]["x the suite's"] == f"{2505 / 2005:.2f}"
    assert rows[("cartpole_mlp, 32", "hand-derived gradient, fused Adam (the suite's)")]["x the suite's"] == "1.00"
    numbers = {n: v for n, v, _ in made.numbers}
    assert numbers["PlainCartpoleMlpThreeTwoAutogradTorchOptimAdamRatio"] == 805 / 405
    # the threads figure reads the threads sweep's runs, not these
    assert set(threads.data(rs, [].append).data["update_us_median"]) == {100.0}


def test_a_network_without_the_suites_own_learner_is_said_and_left_out(tmp_path):
    _timing_run(tmp_path, "plain_learner-a101", "cartpole_mlp", False, "torch", 800.0)
    notes = []
    assert plain_learner.data(load_runs([str(tmp_path)]), notes.append) is None
    assert notes == ["plain learner: cartpole_mlp at batch 32 has no run of the suite's own learner to set the "
                     "others against; left out"]
