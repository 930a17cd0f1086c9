"""docs/cpu_fallback.md's figures against the limits, the Cortex-A9 data file, the driver's run
profile and the cost model they come from."""

import json
import re

import pytest

from compiler.cpu_fallback import movement, resnet18, spec
from compiler.cpu_fallback.cost import CpuModel
from compiler.cpu_fallback.cost.cpus import load_cpu
from compiler.cpu_fallback.cost.model import RuntimeProfile
from driver.registers import run_profile
from tests.docs.doctext import ROOT, marked_paragraph, number
from vdla_hw import limits

DOC = "docs/cpu_fallback.md"
A9 = {k: v["value"] for k, v in json.loads((ROOT / "compiler/data/cpus/cortex-a9.json").read_text())["params"].items()}
UNITS = {"MHz": 1e6, "GHz": 1e9, "B": 1, "KB": 1 << 10, "MB/s": 1e6, "GB/s": 1e9, "ns": 1e-9, "us": 1e-6}


def test_the_code_generation_bounds_are_the_codes():
    text = marked_paragraph(DOC, "test_the_code_generation_bounds_are_the_codes")
    assert number(text, r"`spec.MAX_UNROLL`, (\d+)") == spec.MAX_UNROLL
    assert number(text, r"`movement.MAX_CONCAT_INPUTS`, (\d+) inputs") == movement.MAX_CONCAT_INPUTS
    assert number(text, r"`spec.MAX_STACK_ROW`, ([\d,]+) int32") == spec.MAX_STACK_ROW
    assert number(text, r"int32: (\d+) KiB") * 1024 == 4 * spec.MAX_STACK_ROW


def test_the_work_bounds_are_the_limits():
    text = marked_paragraph(DOC, "test_the_work_bounds_are_the_limits")
    assert 2 ** number(text, r"`MAX_CPU_KERNEL_OPS` = 2\*\*(\d+)") == limits.MAX_CPU_KERNEL_OPS
    assert number(text, r"`MAX_CPU_KERNEL_BYTES` = (\d+) MiB") * (1 << 20) == limits.MAX_CPU_KERNEL_BYTES
    fast, slow = number(text, r"(\d+) to \d+ s at"), number(text, r"\d+ to (\d+) s at")
    low, high = number(text, r"at the ([\d.]+) to [\d.]+ G MAC/s"), number(text, r"to ([\d.]+) G MAC/s")
    ops = limits.MAX_CPU_KERNEL_OPS
    assert (fast, slow) == (round(ops / (high * 1e9)), round(ops / (low * 1e9)))


def test_the_stem_share_of_estimated_blocks_is_the_models():
    text = marked_paragraph(DOC, "test_the_stem_share_of_estimated_blocks_is_the_models")
    share = CpuModel("cortex-a9").kernel_cost(resnet18.stem_spec()).parts["estimated_share"]
    assert number(text, r"([\d.]+) % for the stem conv") == pytest.approx(100 * share, abs=0.005)


def test_the_memory_model_arithmetic_follows_the_a9_data():
    text = marked_paragraph(DOC, "test_the_memory_model_arithmetic_follows_the_a9_data")
    l2, buffers, window = A9["l2_latency_cycles"], A9["fill_buffers"], A9["miss_window_cycles"]
    dram_line = l2 + A9["dram_latency_s"] * A9["clock_hz"]
    assert number(text, r"L2 hit \((\d+) cycles of latency") == l2
    assert number(text, r"two buffers: ([\d.]+) per line") == l2 / buffers
    assert number(text, r"beside the ([\d.]+) measured") == A9["l2_line_cycles"]
    assert number(text, r"the (\d+)-cycle window") == window
    assert number(text, r"\+ (\d+) ns") * 1e-9 == pytest.approx(A9["dram_latency_s"])
    assert number(text, r"ns = (\d+) cycles") == int(dram_line)
    assert number(text, r"(\d+) per line over two buffers") == int(dram_line / buffers)
    assert number(text, r"exposes (\d+) cycles") == int(dram_line / buffers) - window
    assert number(text, r"rate this gives, (\d+) MB/s") == round(latency_bound_bytes_per_s() / 1e6, -1)
    assert number(text, r"at (\d+) MHz") * 1e6 == A9["clock_hz"]


def latency_bound_bytes_per_s() -> float:
    """One core's DRAM rate when every line waits its full latency, its fill buffers all busy."""
    line_cycles = A9["l2_latency_cycles"] + A9["dram_latency_s"] * A9["clock_hz"]
    return A9["line_bytes"] * A9["fill_buffers"] / line_cycles * A9["clock_hz"]


def test_the_two_core_bounds_follow_the_a9_data():
    text = marked_paragraph(DOC, "test_the_two_core_bounds_follow_the_a9_data")
    assert number(text, r"the (\d+) KB L2") * 1024 == A9["l2_bytes"]
    assert number(text, r"\(([\d.]+) GB/s") * 1e9 == A9["shared_dram_bytes_per_s"]
    assert 2 * 1050e6 * number(text, r"at (\d+) % efficiency") / 100 == A9["shared_dram_bytes_per_s"]  # 16 bit
    assert number(text, r"\((\d+) us") * 1e-6 == pytest.approx(A9["fork_join_s"])


def test_two_cores_stay_below_the_shared_dram_ceiling():
    text = marked_paragraph(DOC, "test_two_cores_stay_below_the_shared_dram_ceiling")
    assert number(text, r"ceiling \(([\d.]+) GB/s\)") * 1e9 == A9["shared_dram_bytes_per_s"]
    assert number(text, r"latency-bound\s+(\d+) MB/s") == round(2 * latency_bound_bytes_per_s() / 1e6, -1)
    assert 2 * latency_bound_bytes_per_s() < A9["shared_dram_bytes_per_s"]
    assert number(text, r"\((\d+) us per kernel") * 1e-6 == pytest.approx(A9["fork_join_s"])


def table_rows(text: str) -> dict[str, tuple[str, str]]:
    """`name` (each of a row's names) -> (value cell, source cell) of a | `name` | value | source | table."""
    rows = {}
    for names, value, source in re.findall(r"^\| (`.+?`) \| (.+?) \| (.+?) \|$", text, re.M):
        for name, item in zip(re.findall(r"`(\w+)`", names), re.split(r", ", value)):
            rows[name] = (item, source)
    return rows


def quantity(cell: str):
    if cell == "yes":
        return True
    m = re.fullmatch(r"([\d.]+) ?([A-Za-z/]*)", cell)
    return float(m.group(1)) * UNITS.get(m.group(2), 1)


def test_the_parameter_table_is_the_a9_data():
    rows = table_rows(marked_paragraph(DOC, "test_the_parameter_table_is_the_a9_data"))
    derived = quantity(rows.pop("dram_bytes_per_s")[0])  # not in the data file: the model derives it
    assert derived == pytest.approx(load_cpu("cortex-a9").dram_bytes_per_s) and set(rows) == set(A9)
    for name, (cell, _) in rows.items():
        assert quantity(cell) == pytest.approx(A9[name]), name


def test_the_host_parts_are_the_drivers():
    text = marked_paragraph(DOC, "test_the_host_parts_are_the_drivers")
    profile = run_profile()
    assert number(text, r"(\d+) writes") == profile["register_writes"]
    assert number(text, r"(\d+) reads") == profile["register_reads"]
    assert number(text, r"sleeps of (\d+) us") * 1e-6 == pytest.approx(profile["poll_first_s"])
    assert number(text, r"doubling to (\d+) ms") * 1e-3 == pytest.approx(profile["poll_max_s"])
    assert number(text, r"Linux's (\d+) us timer slack") * 1e-6 == pytest.approx(RuntimeProfile.sleep_slack_s)


def computed_over_valid(conv) -> float:
    """MACs the register-blocked conv computes (every tap, padding included, and whole blocks of
    ``conv.PIXELS`` output pixels per row) over the valid MACs ``work()`` counts, less one."""
    from compiler.cpu_fallback import conv as blocked

    oh = (conv.h + conv.pad[0] + conv.pad[1] - conv.kh) // conv.stride[0] + 1
    ow = (conv.w + conv.pad[2] + conv.pad[3] - conv.kw) // conv.stride[1] + 1
    blocks = -(-ow // blocked.PIXELS)
    return oh * blocks * blocked.PIXELS * conv.kh * conv.kw * conv.c * conv.oc / conv.work().macs - 1


def test_the_blocked_conv_computes_the_padding_it_drops():
    text = marked_paragraph(DOC, "test_the_blocked_conv_computes_the_padding_it_drops")
    workload = resnet18.cpu_workload()
    wide = next(s for s in workload["conv"] if s.kh == 3 and s.w == 56 and s.stride == (1, 1))
    narrow = next(s for s in workload["conv"] if s.kh == 3 and s.w == 7)
    stem = workload["layer0"][0]
    assert number(text, r"multiplies ([\d.]+) % more") == pytest.approx(100 * computed_over_valid(stem), abs=0.1)
    assert number(text, r"3x3 convs (\d+) %") == pytest.approx(100 * computed_over_valid(wide), abs=0.5)
    assert number(text, r"7x7 ones (\d+) %") == pytest.approx(100 * computed_over_valid(narrow), abs=0.5)
