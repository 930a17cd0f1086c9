"""experiments/vta_fig8.py: ResNet-18 and -34 end to end at a small resolution; the VTA bars
banded, the errors computed from the reports and the paper's data."""

import pytest

from compiler import paper
from experiments import vta_fig8


def test_the_study_runs_both_models_and_bands_only_the_vta_bars(tmp_path, capsys, read_rows):
    assert vta_fig8.main(["--resolution", "32", "--out", str(tmp_path)]) == 0
    rows = {r["bar"]: r for r in read_rows(tmp_path / "vta_fig8.csv")}
    theirs = paper.vta_fig8()
    for model, title in (("resnet18", "ResNet-18"), ("resnet34", "ResNet-34")):
        a9, vta = rows[f"{title} Cortex-A9"], rows[f"{title} VTA"]
        assert float(a9["paper"]) == theirs[model]["cortex_a9_ms"] and a9["band"] == ""
        assert float(vta["paper"]) == theirs[model]["vta_pynq_z1_ms"] and float(vta["band"]) == vta_fig8.VTA_BAND
        for row in (a9, vta):
            assert float(row["error"]) == pytest.approx(float(row["ours"]) / float(row["paper"]) - 1, abs=1e-3)
        parts = [float(rows[f"{title} VTA:   of which {what}"]["ours"]) for _, what in vta_fig8.PARTS]
        assert sum(parts) == pytest.approx(float(vta["ours"]), rel=1e-3)
        speedup = float(rows[f"{title} speedup"]["ours"])
        assert speedup == pytest.approx(float(a9["ours"]) / float(vta["ours"]), rel=1e-3)
        # the same bar under VTA's host runtime: banded too, its parts add up, layouts kept on the device
        other = f"{title} (VTA's runtime)"
        theirs_vta = rows[f"{other} VTA"]
        assert float(theirs_vta["band"]) == vta_fig8.VTA_BAND and float(theirs_vta["paper"]) == float(vta["paper"])
        parts = [float(rows[f"{other} VTA:   of which {what}"]["ours"]) for _, what in vta_fig8.PARTS]
        assert sum(parts) == pytest.approx(float(theirs_vta["ours"]), rel=1e-3)

        def moved(name):
            return sum(float(rows[f"{name} VTA:     host: {part}"]["ours"]) for part in ("pack", "copy", "unpack"))
        assert moved(other) < moved(title) and float(rows[f"{other} VTA:     host: instructions"]["ours"]) > 0
        assert f"{title} VTA:     host: instructions" not in rows  # our driver keeps its streams loaded
        assert float(rows[f"{other} VTA:     host: poll"]["ours"]) < float(rows[f"{title} VTA:     host: poll"]["ours"])
    options = {o["option"]: o for o in read_rows(tmp_path / "vta_fig8_options.csv")}
    assert options["add_on_vdla"]["value"] == "True" and options["add_on_vdla"]["applied"] == "PartitionOptions"
    assert options["config"]["value"] == "vta-pynq-board"   # VTA's hardware as measured (its DMA, calibrated port)
    parameters = read_rows(tmp_path / "vta_fig8_parameters.csv")
    assert all(p["source"] for p in parameters)
    vta_runtime = {p["parameter"]: p["source"] for p in parameters if p["component"] == "vta host runtime"}
    assert "pynq_driver.cc" in vta_runtime["register_writes"] and "graphpack.py" in vta_runtime["keeps_layouts"]
    assert (tmp_path / "vta_fig8.pdf").stat().st_size > 0
    assert "not a comparison" in capsys.readouterr().out
