"""experiments/tvm_fig10.py: every Fig. 10 layer with and without latency hiding, end to end at
small maps; the errors computed from our simulation and the paper's data."""

import pytest

from compiler import paper
from experiments import tvm_fig10


def test_the_layers_are_the_papers_shapes_with_maps_scaled_to_the_resolution():
    rows = paper.fig10()
    full = [tvm_fig10.layer_of(row, 224) for row in rows]
    assert [(layer.h, layer.ic, layer.oc, layer.k, layer.stride, layer.pad) for layer in full] == \
        [(int(r["H"]), int(r["IC"]), int(r["OC"]), int(r["K"]), int(r["stride"]), int(r["pad"])) for r in rows]
    small = [tvm_fig10.layer_of(row, 64) for row in rows]
    assert [layer.h for layer in small] == [-(-int(r["H"]) * 64 // 224) for r in rows]


def test_every_layer_is_compared_with_and_without_latency_hiding(tmp_path, capsys, read_rows):
    assert tvm_fig10.main(["--resolution", "32", "--out", str(tmp_path)]) == 0
    rows = read_rows(tmp_path / "tvm_fig10.csv")
    labels = [r["label"] for r in paper.fig10()]
    bars = {r["bar"]: r for r in rows}
    for label in labels:
        assert {f"{label} GOPS, latency hiding", f"{label} GOPS, no latency hiding"} <= set(bars)
    layers = {r["label"]: r for r in read_rows(tmp_path / "tvm_fig10_layers.csv")}
    assert list(layers) == labels
    for label in labels:
        for key, what in (("lh", "latency hiding"), ("no_lh", "no latency hiding")):
            row = bars[f"{label} GOPS, {what}"]
            assert float(row["ours"]) == pytest.approx(float(layers[label][f"{key}_gops"]), rel=1e-3)
            assert float(row["error"]) == pytest.approx(float(row["ours"]) / float(row["paper"]) - 1, abs=1e-3)
            assert int(layers[label][f"{key}_cycles"]) > 0
    assert all(r["band"] == "" for r in rows)  # the issue sets no band for Fig. 10
    assert (tmp_path / "tvm_fig10.png").stat().st_size > 0
    assert "not a comparison" in capsys.readouterr().out
