"""`vdla sim`: JSON report, final image, Chrome trace, and one-line errors with exit status 2."""

import json

import numpy as np

from vdla.cli import main
from vdla_hw import isa, regmap
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.semantics import execute
from vdla_sim import simulate
from vdla_sim.progen import random_program


def test_sim_json_image_and_trace(tmp_path, capsys):
    bundle = random_program(7, "tiny", threads=2, blocks=3)
    path, out, trace = tmp_path / "p.npz", tmp_path / "out.npz", tmp_path / "t.json"
    bundle.save(path)
    assert main(["sim", str(path), "--json", "-o", str(out), "--trace", str(trace)]) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("cycles", "seconds", "gops", "gemm_utilization", "modules", "bytes", "queue_occupancy",
                "counters", "tokens_left"):
        assert key in report
    assert tuple(report["modules"]) == isa.MODULES
    assert all(tuple(c) == regmap.MODULE_COUNTERS for c in report["modules"].values())
    api = simulate(bundle)
    assert report["cycles"] == api.cycles and report["modules"] == api.modules
    assert np.array_equal(Bundle.load(out).dram, execute(bundle).dram)
    events = json.loads(trace.read_text())["traceEvents"]
    insns = [e for e in events if e["ph"] == "X" and e["cat"] != "fetch"]
    assert sorted(e["args"]["index"] for e in insns) == list(range(bundle.insn_count))
    assert {e["tid"] for e in insns} <= {2, 3, 4}
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"cmd_load", "cmd_compute", "cmd_store", "token_l2c", "token_c2l", "token_c2s", "token_s2c"} <= counters


def test_sim_text_report(tmp_path, capsys):
    path = tmp_path / "p.npz"
    random_program(1, "tiny").save(path)
    assert main(["sim", str(path), "--config", "tiny"]) == 0
    text = capsys.readouterr().out
    assert "cycles" in text and "GEMM utilisation" in text and "compute" in text


def test_sim_errors_are_one_line(tmp_path, capsys):
    b = BundleBuilder("tiny")
    b.emit("GEMM", pop_prev=1)
    b.emit("FINISH")
    path = tmp_path / "dead.npz"
    b.build().save(path)
    assert main(["sim", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vdla: error: deadlock at cycle") and "\n" not in err
    assert main(["sim", str(tmp_path / "missing.npz")]) == 2
    assert main(["sim", str(path), "--config", "osdi18"]) == 2
