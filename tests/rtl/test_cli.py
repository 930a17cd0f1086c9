"""`vdla rtl` prints the keys of `vdla sim --json` with the same cycles and image, plus the
bench's wall-clock count and the protocol checker's counts; on the FPGA top (`--top axi`) the
three cycle counts agree at the configuration's memory latency and the image survives random
bus stalls; bad arguments are one-line errors (exit status 2)."""

from __future__ import annotations

import json

import pytest

from vdla.cli import main
from vdla_hw import regmap
from vdla_hw.asm import assemble

from tests.rtl.conftest import EXAMPLES
from vdla_sim.progen import random_program

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
    for key in ("cycles", "dram_sha256", "instructions", "config", "last_retire", "modules"):
        assert rtl[key] == sim[key], key
    assert rtl["wall_cycles"] == rtl["cycles"] + regmap.IRQ_AFTER_CYCLES
    basis = rtl.pop("measured_by")
    assert set(basis) == set(rtl) and basis["cycles"] == basis["modules"] == "rtl"
    assert basis["bytes"].startswith("simulator") and basis["queue_occupancy"] == "not measured"
    assert all(rtl[key] is None for key, why in basis.items() if why == "not measured")
    assert rtl["axi_checks"]["violations"] == 0 and rtl["axi_checks"]["checks"] > 0
    assert (tmp_path / "out.npz").exists()


def test_vdla_rtl_fpga_top_cycles_and_stalls(tmp_path, capsys):
    path = tmp_path / "r.npz"
    random_program(7, "tiny").save(path)
    assert main(["sim", str(path), "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert main(["rtl", str(path), "--top", "axi", "--sim", "verilator", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert exact["cycles"] == exact["wall_cycles"] - regmap.IRQ_AFTER_CYCLES == sim["cycles"] and exact["bench"] == "compiled"
    assert exact["dram_sha256"] == sim["dram_sha256"] and exact["axi_checks"]["violations"] == 0
    assert main(["rtl", str(path), "--top", "axi", "--sim", "verilator", "--json", "--stall-prob", "0.5",
                 "--seed", "3"]) == 0
    stalled = json.loads(capsys.readouterr().out)
    assert stalled["dram_sha256"] == sim["dram_sha256"] and stalled["axi_checks"]["violations"] == 0
    assert stalled["cycles"] == stalled["wall_cycles"] - regmap.IRQ_AFTER_CYCLES > sim["cycles"]


@pytest.mark.parametrize("args, message", [
    (["--stall-prob", "1.5"], "--stall-prob: 1.5 is outside"),
    (["--top", "fpga"], "invalid choice"),
    (["--mem-latency", "1"], "--mem-latency: 1 is outside"),
    (["--bench", "compiled"], "runs on Verilator only"),          # the default simulator is Icarus
    (["--sim", "verilator", "--bench", "compiled", "--vcd", "w.vcd"], "writes no waves"),
])
def test_vdla_rtl_bad_arguments(tmp_path, capsys, args, message):
    path = tmp_path / "p.npz"
    random_program(1, "tiny").save(path)
    try:
        status = main(["rtl", str(path), *args])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err


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


def test_vdla_rtl_runs_a_program_at_its_cycle_bound(tmp_path, capsys):
    """Issue 22: the cycle bound is checked before the RTL; a program needing exactly the bound runs."""
    bundle = assemble(EXAMPLES[0].read_text(), source=str(EXAMPLES[0]))
    path = tmp_path / "p.npz"
    bundle.save(path)
    assert main(["sim", str(path), "--json"]) == 0
    cycles = json.loads(capsys.readouterr().out)["cycles"]
    assert main(["rtl", str(path), "--sim", "verilator", "--max-cycles", str(cycles), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] == cycles
    assert main(["rtl", str(path), "--sim", "verilator", "--max-cycles", str(cycles - 1)]) == 2
    assert "the RTL did not finish" not in capsys.readouterr().err  # refused before the RTL ran


def test_the_rtl_device_refuses_what_cannot_finish_before_running(monkeypatch):
    """The 16383 x 16383 loop of vdla_hw/limits.py needs 805 M cycles: past the compiled bench's
    bound, refused in one line without starting the RTL."""
    from driver import DeviceError, open_device, rtl_run

    def never(*args, **kwargs):
        raise AssertionError("the RTL started")

    monkeypatch.setattr(rtl_run, "run_bundles", never)
    loop = assemble(".config tiny\n.uops k 0,0,0 1,0,0 2,0,0\nLOAD uop sram=0 dram=k x=3\n"
                    "GEMM uop=0:3 iter=16383x16383\nFINISH\n", source="loop.s")
    with open_device("rtl", loop.config) as device, pytest.raises(DeviceError) as err:
        device.run(loop)
    assert str(err.value).startswith("rtl device refused the program before running it: the program needs at "
                                     "least 805,208,") and "\n" not in str(err.value)
