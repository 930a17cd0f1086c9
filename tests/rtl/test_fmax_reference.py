"""Clock estimate vs published Vivado clocks of the held-out validation designs
(vdla_hw/rtl/fmax_reference.py): three CPU cores (PicoRV32 on an Artix-7 -1, two VexRiscv
configurations on an Artix-7 -3 brought to -1) and four fpga-tool-perf test designs on an Artix-7 -1
(three block-RAM designs and a LUT-RAM one, vendored). Nothing in the delay table is derived from
them.

The stored validation (vdla_hw/rtl/fmax_validation.json) is what gives every estimate its error
band (vdla_hw.rtl.fmax.with_band): each design's netlist is timed again here and its estimate must
be the stored one (the band describes today's model), inside the band, and below the published
clock (the estimate is a lower bound of what Vivado reaches). The netlists come from the machine's
timing cache when yosys, its script and the Verilog are unchanged (fmax_reference.netlist); the
timing model is always run. Slow: seven syntheses on a cold cache, the CPU cores' take most of it."""

from __future__ import annotations

import pytest

from vdla_hw.rtl.fmax_reference import REFERENCES, estimate, load_validation

pytestmark = [pytest.mark.rtl, pytest.mark.slow]


@pytest.mark.parametrize("ref", REFERENCES, ids=[r.name for r in REFERENCES])
def test_estimate_is_the_stored_validation_and_inside_its_band(ref, tmp_path):
    val = load_validation()
    stored = {d["name"]: d for d in val["designs"]}[ref.name]
    res = estimate(ref, tmp_path)
    print(f"{ref.name}: estimate {res['fmax_mhz']} MHz, published {ref.published_mhz} MHz ({ref.speed_grade}), "
          f"-1: {res['published_mhz_minus1']} MHz, Vivado / estimate {res['vivado_over_estimate']}")
    assert res["fmax_mhz"] == pytest.approx(stored["fmax_mhz"], rel=0.005), \
        "the model changed: python -m vdla_hw.rtl.fmax_reference --write, then the docs' figures"
    assert val["band"]["low"] <= res["vivado_over_estimate"] <= val["band"]["high"]
    assert res["vivado_over_estimate"] > 1.0, "the estimate is no longer below what Vivado reached"
    # the worst path is between the design's own registers, never from or to a top-level port
    cp = res["critical_path"]
    assert cp["start"]["cell_type"] in ("FDRE", "FDSE", "SRL16E", "RAMB18E1", "RAMB36E1", "DSP48E1", "RAM64X1D")
    assert cp["end"]["cell_type"] in ("FDRE", "FDSE", "RAMB18E1", "RAMB36E1", "DSP48E1", "RAM64X1D")
