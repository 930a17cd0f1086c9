"""docs/rtl.md's "Clock estimate" figures, read from the page: every cell delay it quotes is the
delay table's (vdla_hw/rtl/xc7z020_timing.toml), its worked three-LUT path adds up from those
delays, and its clock uncertainty is the one vdla_hw.rtl.sta adds."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from vdla_hw.rtl.xc7_cells import delays

RTL = Path(__file__).resolve().parents[2] / "docs" / "rtl.md"

# what the page says -> (section, name) of the delay table; the figure is the phrase's last number
QUOTED = {
    r"FF clock-to-Q (\d\.\d+) ns": ("ff", "clk_to_q"),
    r"LUT (\d\.\d+) ns": ("lut", "i_to_o"),
    r"A -> P without any register (\d\.\d+) ns": ("dsp48e1", "a_to_p"),
    r"A into the P register (\d\.\d+) ns": ("dsp48e1", "dport_setup_a_preg"),
    r"ns instead of (\d\.\d+) without the pre-adder": ("dsp48e1", "setup_a_preg"),
    r"clock -> P from the M register (\d\.\d+) ns": ("dsp48e1", "clk_to_p_mreg"),
    r"from the P register (\d\.\d+) ns": ("dsp48e1", "clk_to_p_preg"),
    r"clock-to-out (\d\.\d+) ns without the output register": ("bram", "clk_to_do"),
    r"(\d\.\d+) ns with it": ("bram", "clk_to_do_reg"),
    r"flip-flop's clock-to-Q \((\d\.\d+) ns\)": ("ff", "clk_to_q"),
    r"not the SRL's \((\d\.\d+) ns\)": ("srl", "clk_to_q"),
    r"= (\d\.\d+) ns \+ \d\.\d+ ns per doubling": ("routing", "base"),
    r"ns \+ (\d\.\d+) ns per doubling": ("routing", "log2_fanout"),
    r"their own setup \((\d\.\d+) and \d": ("ff", "setup_ce"),
    r"their own setup \(\d\.\d+ and (\d\.\d+) ns\)": ("ff", "setup_sr"),
}


def _clock_section() -> str:
    text = RTL.read_text().split("## Clock estimate", 1)[1].split("\n## ", 1)[0]
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("phrase", QUOTED)
def test_quoted_delays_are_the_delay_table(phrase):
    said = re.findall(phrase, _clock_section())
    section, name = QUOTED[phrase]
    assert said, f"docs/rtl.md no longer says {phrase!r}: update QUOTED"
    assert all(float(v) == delays()[section][name] for v in said), \
        f"{phrase}: the page says {said}, xc7z020_timing.toml [{section}] {name} = {delays()[section][name]}"


def test_three_lut_path_adds_up():
    """`clk-to-Q + 3 x (LUT + hop) + setup = total`, each term the table's."""
    m = re.search(r"(\d\.\d+) \+ 3 x \((\d\.\d+) \+ (\d\.\d+)\) \+ (\d\.\d+) = (\d\.\d+) ns", _clock_section())
    q, lut, hop, setup, total = map(float, m.groups())
    d = delays()
    assert (q, lut, hop, setup) == (d["ff"]["clk_to_q"], d["lut"]["i_to_o"], d["routing"]["base"], d["ff"]["setup_d"])
    assert total == pytest.approx(q + 3 * (lut + hop) + setup, abs=5e-4)


def test_clock_uncertainty_is_the_one_the_analysis_adds():
    """The page's uncertainty for the PS7's FCLK0 at 100 MHz is what vdla_hw.rtl.sta adds for it."""
    from vdla_hw.rtl import sta

    said = float(re.search(r"FCLK0 at 100 MHz, (\d\.\d+) ns", _clock_section()).group(1))
    assert said == round(sta.clock_uncertainty(delays(), sta.fclk_input_jitter(100.0)), 4)
    assert said == float(re.search(r"so (\d\.\d+) ns at 100 MHz", _clock_section()).group(1))


def test_stated_band_is_the_validation():
    """The band the page prints (generated from vdla_hw/rtl/fmax_validation.json) is the stored one,
    over at least six designs, and the page says the estimate is a lower bound only while every
    ratio is above 1."""
    from vdla_hw.rtl.fmax_reference import load_validation

    val = load_validation()
    low, high, n = re.search(r"Band: Vivado / estimate from (\d\.\d+) to (\d\.\d+) over (\d+) designs",
                             _clock_section()).groups()
    assert (float(low), float(high), int(n)) == (round(val["band"]["low"], 3), round(val["band"]["high"], 3),
                                                 len(val["designs"]))
    assert int(n) >= 6
    assert "the static estimate is a lower bound" in _clock_section() and val["band"]["low"] > 1.0
