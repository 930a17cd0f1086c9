"""Clock estimate vs a published Vivado fmax: PicoRV32 (picorv32_axi, TWO_CYCLE_ALU) on an Artix-7 -1
(the Zynq-7020 PL fabric), 4.1 ns / 243 MHz with Vivado 2016.1 (tests/data/reference_circuits/README.md
says where it is published). Nothing in the delay table is derived from this circuit.

Stated tolerance: the estimate is a lower bound of what Vivado reaches. Its routing allowance comes
from a design Vivado placed without timing pressure, while the published number comes from Vivado's
best-effort flow (Explore directives, physical optimisation, retiming), so the estimate may be well
below it -- the test requires 0.40 <= estimate / published <= 1.0 (docs/rtl.md, "Clock estimate")."""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla_hw.rtl.fmax import analyse_verilog

pytestmark = pytest.mark.rtl

REF = Path(__file__).resolve().parents[1] / "data" / "reference_circuits" / "picorv32"
PUBLISHED_MHZ = 243.0          # 4.1 ns, xc7a15t-fgg484-1, Vivado 2016.1
TOLERANCE = (0.40, 1.0)        # estimate / published


def test_picorv32_estimate_is_within_the_stated_tolerance_of_vivado(tmp_path):
    vfile = tmp_path / "picorv32_tabtest.v"
    vfile.write_text((REF / "tabtest.v").read_text() + (REF / "picorv32.v").read_text())
    _stat, timing = analyse_verilog(vfile, "top", tmp_path)
    ratio = timing["fmax_mhz"] / PUBLISHED_MHZ
    print(f"PicoRV32: estimate {timing['fmax_mhz']} MHz, Vivado {PUBLISHED_MHZ} MHz, ratio {ratio:.2f}")
    assert TOLERANCE[0] <= ratio <= TOLERANCE[1], timing["critical_path"]
    # the worst path is inside the core or its port registers, never from or to a top-level port
    cp = timing["critical_path"]
    assert cp["start"]["cell_type"] in ("FDRE", "FDSE", "SRL16E") and cp["end"]["cell_type"] in ("FDRE", "FDSE")
