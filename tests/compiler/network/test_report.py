"""The report (compiler/network/report.py): useful against executed MACs, and offloads that lose."""

import pytest

from compiler.network.executor import LayerRecord
from compiler.network.report import SLOWER, summarise, table, useful_work


def conv_3_to_10(placement="vdla"):
    """A 3->10-channel 3x3 conv on 32x32 as the executor records it on osdi18: 9 GEMM uops per output
    pixel (one 16-lane input block, one 16-lane output block), each 16 x 16 MACs."""
    pixels = 32 * 32
    useful, lanes = pixels * 10 * 3 * 9, pixels * 9 * 16 * 16
    cycles = 28_000
    return LayerRecord("c", "conv", placement, "r", lanes, useful, cycles=cycles, seconds=cycles / 200e6,
                       cpu_seconds=1e-3, host_seconds=1e-5, utilization=pixels * 9 / cycles)


def test_a_3_to_10_channel_conv_reports_useful_and_lane_gops_apart():
    r = conv_3_to_10()
    work = useful_work(r)
    assert work["gops"] == pytest.approx(2 * r.macs / r.seconds / 1e9)
    assert work["useful_gops"] / work["gops"] == pytest.approx(30 / 256)  # 3x10 of 16x16 lanes
    assert work["useful_utilization"] == pytest.approx(r.utilization * 30 / 256)
    line = next(line for line in table([r], summarise([r])).splitlines() if line.startswith("c "))
    assert f"{work['gops']:6.1f} {work['useful_gops']:6.1f}" in line
    assert f"{r.utilization * 100:5.1f}% {work['useful_utilization'] * 100:5.1f}%" in line
    totals = summarise([r])
    assert totals["gemm_useful_gops"] == pytest.approx(work["useful_gops"])
    assert totals["gemm_useful_utilization"] == pytest.approx(work["useful_utilization"])
    assert useful_work(conv_3_to_10("cpu")) == {"gops": 0.0, "useful_gops": 0.0, "useful_utilization": 0.0}


def test_an_offload_slower_than_the_cpu_is_flagged():
    wins, loses = conv_3_to_10(), conv_3_to_10()
    loses.name, loses.host_seconds = "slow", 2e-3
    totals = summarise([wins, loses])
    assert totals["slower_offloads"] == ["slow"] and totals["offloaded_ops"] == 2
    lines = table([wins, loses], totals).splitlines()
    assert next(line for line in lines if line.startswith("slow ")).split()[2] == "vdla" + SLOWER
    assert next(line for line in lines if line.startswith("c ")).split()[2] == "vdla"
    assert any(line.startswith(f"{SLOWER}: offloaded but slower") and "1 op(s)" in line for line in lines)


def test_the_share_of_macs_offloaded_is_reported():
    on, off = conv_3_to_10(), conv_3_to_10("cpu")
    totals = summarise([on, off, off])
    assert totals["useful_macs"] == 3 * on.useful_macs and totals["cpu_ops_with_macs"] == 2
    line = next(line for line in table([on, off, off], totals).splitlines() if line.startswith("MACs offloaded:"))
    assert f"{on.useful_macs / 1e6:.1f} of {3 * on.useful_macs / 1e6:.1f} M useful MACs (33.3%); 2 op(s)" in line
