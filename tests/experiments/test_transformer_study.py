"""experiments/transformer_study.py: the encoder-block study end to end on a tiny block and a
two-point space; the shape verdict computed from the points; one-line errors for bad options."""

import json
import subprocess
import sys

import pytest

from experiments import transformer_study as ts

TINY = ["--d-model", "32", "--heads", "2", "--ffn", "64", "--seq", "8", "--activation", "relu"]


def point(block, latency, utilization, status="ok"):
    return {"LOG_BLOCK": block, "LOG_WGT_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15, "LOG_ACC_BUFF_SIZE": 15,
            "status": status, "latency_s": latency, "gemm_utilization": utilization}


def test_each_array_is_judged_at_its_fastest_valid_point():
    rows = [point(3, 0.3, 0.9), point(3, 0.2, 0.8), point(4, 0.1, 0.5), point(4, None, None, "invalid")]
    best = ts.best_per_block(rows)
    assert [(b["LOG_BLOCK"], b["latency_s"]) for b in best] == [(3, 0.2), (4, 0.1)]


@pytest.mark.parametrize("latencies, utilizations, faster, efficient", [
    ((0.3, 0.2, 0.1), (0.9, 0.8, 0.3), "yes", "yes"),
    ((0.3, 0.2, 0.25), (0.9, 0.8, 0.3), "no", "yes"),
    ((0.3, 0.2, 0.1), (0.5, 0.8, 0.3), "yes", "no")])
def test_the_shape_verdict_follows_the_points(latencies, utilizations, faster, efficient):
    best = [point(b, lat, u) for b, lat, u in zip((3, 4, 5), latencies, utilizations)]
    text = ts.shape_verdict(best)
    assert f"larger arrays faster: {faster};" in text and f"smaller arrays more efficient: {efficient}" in text
    assert "no shape" in ts.shape_verdict(best[:1])


def run(*argv):
    return subprocess.run([sys.executable, "-m", "experiments.transformer_study", *argv], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("argv, named", [
    (["--heads", "5"], "transformer_study: encoder block: d_model 768 is not a multiple of heads 5"),
    (["--config", "no-such-preset"], "transformer_study: configuration parameter config='no-such-preset'"),
    (["--space", "/nonexistent/space.json"], "transformer_study: /nonexistent/space.json:")])
def test_bad_values_are_one_line_errors_before_any_work(tmp_path, capsys, argv, named):
    assert ts.main(["--out", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(named), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, named", [(["--seq", "0"], "argument --seq: 0 is not positive"),
                                         (["--ffn", "x"], "argument --ffn: 'x' is not an integer"),
                                         (["--activation", "tanh"], "argument --activation: invalid choice")])
def test_bad_options_are_usage_errors(tmp_path, capsys, argv, named):
    with pytest.raises(SystemExit) as exit_:
        ts.main(["--out", str(tmp_path / "out"), *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and named in err[0], err  # one line, as vdla's own parser writes it


@pytest.mark.slow
def test_tiny_block_end_to_end(tmp_path, read_rows):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"base": "osdi18", "parameters": {"LOG_BLOCK": [3, 4], "LOG_ACC_BUFF_SIZE": [15]},
                                 "search": {"method": "grid"}}))
    out = tmp_path / "results/transformer"  # docs/onnx.md's command, on a tiny block and space
    result = run("--out", str(out), *TINY, "--space", str(space))
    assert result.returncode == 0, result.stderr
    assert "bit exact vs the quantized numpy reference: True" in result.stdout
    assert "SCALE-Sim 3's ViT shape: larger arrays faster:" in result.stdout
    rows = read_rows(out / "transformer_study.csv")
    assert sorted(int(r["LOG_BLOCK"]) for r in rows) == [3, 4] and all(r["status"] == "ok" for r in rows)
    points = read_rows(out / "sweep" / "points.csv")
    for row in rows:  # the study's table is the sweep's rows
        same = [p for p in points if p["LOG_BLOCK"] == row["LOG_BLOCK"]]
        assert len(same) == 1 and float(same[0]["latency_s"]) == float(row["latency_s"])
        assert int(row["LOG_ACC_BUFF_SIZE"]) == 15 and int(row["LOG_WGT_BUFF_SIZE"]) == 15  # osdi18's own
    layers = read_rows(out / "run" / "layers.csv")
    assert sum(int(r["cycles"]) for r in layers) > 0
    resident = read_rows(out / "transformer_study_resident.csv")
    # a second study of another block into the same folder tabulates its own points only
    assert run("--out", str(out), *TINY[:-2], "--activation", "gelu", "--space", str(space)).returncode == 0
    assert len(read_rows(out / "sweep" / "points.csv")) == 4 and len(read_rows(out / "transformer_study.csv")) == 2
    parameters = read_rows(out / "transformer_study_parameters.csv")
    assert any(r["parameter"] == "LOG_BLOCK" and r["source"] for r in parameters)
    shares = [float(r["share"]) for r in resident]  # of the CPU-resident time, largest first
    assert shares and shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1 + 1e-6
    assert (out / "transformer_study.png").stat().st_size > 0 and (out / "encoder_block.onnx").stat().st_size > 0
