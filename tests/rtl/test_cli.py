"""`vdla rtl` prints the same JSON keys as `vdla sim` and the same cycles and image."""

from __future__ import annotations

import json

import pytest

from vdla.cli import main
from vdla_hw.asm import assemble

from tests.rtl.conftest import EXAMPLES

pytestmark = pytest.mark.rtl


def test_vdla_rtl_json_matches_vdla_sim(tmp_path, capsys):
    bundle = assemble(EXAMPLES[0].read_text(), source=str(EXAMPLES[0]))
    path = tmp_path / "p.npz"
    bundle.save(path)
    assert main(["sim", str(path), "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert main(["rtl", str(path), "--sim", "icarus", "--json", "-o", str(tmp_path / "out.npz")]) == 0
    rtl = json.loads(capsys.readouterr().out)
    assert set(sim) <= set(rtl)
    for key in ("cycles", "dram_sha256", "instructions", "config", "last_retire", "busy", "stall"):
        assert rtl[key] == sim[key], key
    assert (tmp_path / "out.npz").exists()


def test_vdla_rtl_user_error(tmp_path, capsys):
    assert main(["rtl", str(tmp_path / "missing.npz")]) == 2
    assert "vdla: error:" in capsys.readouterr().err


@pytest.mark.parametrize("sim", ["icarus"])  # Verilator's --trace build costs CI ~1.5 min; its VCD path is cocotb's own
def test_vdla_rtl_writes_the_vcd_it_names(tmp_path, capsys, sim):
    bundle = assemble(EXAMPLES[0].read_text(), source=str(EXAMPLES[0]))
    path, vcd = tmp_path / "p.npz", tmp_path / "w.vcd"
    bundle.save(path)
    assert main(["rtl", str(path), "--sim", sim, "--vcd", str(vcd)]) == 0
    assert f"waves written to {vcd}" in capsys.readouterr().err
    text = vcd.read_text()
    assert text.startswith("$date") or "$timescale" in text[:2000]
    assert "$enddefinitions" in text and "\n#" in text  # a VCD header and time steps
