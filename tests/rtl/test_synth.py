"""Fit: yosys synth_xilinx of the osdi18 design fits the PYNQ-Z1's xc7z020 (DSP48E1 <= 220 with
two int8 multiplies packed per DSP, LUTs <= 80 %, BRAM36 <= 140). Slow (minutes)."""

from __future__ import annotations

import pytest

from vdla_hw.rtl.synth import LIMITS, parse_stat, synthesize

pytestmark = [pytest.mark.rtl, pytest.mark.slow]


def test_parse_stat_counts_cells():
    text = "\n      10   LUT6\n       4   LUT2\n       2   RAM64M\n       3   FDRE\n       5   DSP48E1\n" \
           "       2   RAMB18E1\n       1   RAMB36E1\n"
    res = parse_stat(text)
    assert (res["lut"], res["ff"], res["dsp"], res["bram36"]) == (22, 3, 5, 2.0)


def test_osdi18_fits_the_pynq_z1(tmp_path):
    res = synthesize("osdi18", tmp_path)
    assert res["dsp"] <= LIMITS["dsp"], res
    assert res["lut"] <= LIMITS["lut"], res
    assert res["bram36"] <= LIMITS["bram36"], res
    assert res["fits"]
    # the GEMM core's 256 int8 multiplies use 128 packed DSPs
    assert res["dsp"] >= 128
