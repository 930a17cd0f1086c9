"""experiments/tvm_fig21.py: end to end at a small resolution, and the bars computed from the
report and the paper's data (never typed in)."""

from types import SimpleNamespace

import pytest

from compiler import paper
from experiments import study, tvm_fig21


def fake_report(scale: float):
    cats = {"cpu_only": {"layer0": 0.1 * scale, "conv": 2.0 * scale, "other": 0.2 * scale, "host": 0.0},
            "cpu_plus_vdla": {"layer0": 0.1 * scale, "conv": 0.05 * scale, "other": 0.2 * scale, "host": 0.1 * scale}}
    cpu, vdla = sum(cats["cpu_only"].values()), sum(cats["cpu_plus_vdla"].values())
    return SimpleNamespace(totals={"categories": cats, "cpu_only_s": cpu, "offload_s": vdla, "speedup": cpu / vdla,
                                   "offloaded_speedup": 40.0})


def test_bars_follow_the_report_and_the_papers_data(monkeypatch):
    rows = {r["bar"]: r for r in tvm_fig21.bars(fake_report(1.0))}
    assert rows["CPU only: other convolutions"]["paper"] == paper.fig21()["cpu_only"]["conv"]
    assert rows["CPU only: other convolutions"]["error"] == pytest.approx(2.0 / paper.fig21()["cpu_only"]["conv"] - 1,
                                                                          abs=1e-4)
    assert rows["CPU+VDLA: other ops + host"]["ours"] == pytest.approx(0.3)  # the paper's 'other' holds host work
    doubled = {r["bar"]: r for r in tvm_fig21.bars(fake_report(2.0))}
    assert doubled["CPU only: total"]["ours"] == pytest.approx(2 * rows["CPU only: total"]["ours"])
    bars = paper.fig21()
    bars["cpu_only"]["conv"] = 4.0
    monkeypatch.setattr(paper, "fig21", lambda: bars)
    moved = {r["bar"]: r for r in tvm_fig21.bars(fake_report(1.0))}
    assert moved["CPU only: other convolutions"]["error"] == pytest.approx(-0.5)


def test_the_study_runs_end_to_end_and_writes_its_table(tmp_path, capsys, read_rows):
    assert tvm_fig21.main(["--resolution", "32", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "not a comparison" in out  # 32 is not the paper's 224
    rows = read_rows(tmp_path / "tvm_fig21.csv")
    assert list(rows[0]) == list(study.COMPARISON_FIELDS)
    bars = {r["bar"]: r for r in rows}
    assert {"CPU only: total", "CPU+VDLA: total", "whole-network speedup"} <= set(bars)
    for row in rows:
        if row["paper"]:
            ours, theirs = float(row["ours"]), float(row["paper"])
            assert float(row["error"]) == pytest.approx(ours / theirs - 1, abs=1e-3)
            if row["band"]:
                assert row["within"] == ("yes" if abs(ours / theirs - 1) <= float(row["band"]) else "NO")
    for name, row in bars.items():  # banded: the bars the model represents; the rest (other ops, totals) not
        assert (row["band"] != "") == (name in tvm_fig21.BANDED), name
        assert row["band"] == "" or float(row["band"]) == tvm_fig21.BAR_BAND
    assert set(tvm_fig21.BANDED) <= set(bars) and "graph file" in out and "not public" in out
    host_parts = [float(r["ours"]) for name, r in bars.items() if name.startswith("CPU+VDLA:     host: ")]
    assert host_parts and sum(host_parts) == pytest.approx(float(bars["CPU+VDLA:   of which host"]["ours"]), abs=1e-3)
    options = read_rows(tmp_path / "tvm_fig21_options.csv")
    assert [o["option"] for o in options] == [o.name for o in tvm_fig21.OPTIONS]
    assert all(o["source"] for o in options)
    parameters = read_rows(tmp_path / "tvm_fig21_parameters.csv")
    assert {p["component"].split()[0] for p in parameters} >= {"configuration", "CPU"}
    assert all(p["source"] for p in parameters)
    for ext in study.FORMATS:
        assert (tmp_path / f"tvm_fig21.{ext}").stat().st_size > 0


def test_an_output_that_cannot_be_written_is_one_line_before_any_work(tmp_path, capsys):
    (tmp_path / "tvm_fig21.csv").mkdir()  # a folder where the table goes
    assert tvm_fig21.main(["--resolution", "32", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tvm_fig21: ") and err.count("\n") == 1
