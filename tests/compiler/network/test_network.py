"""Whole networks: placement, and the executor bit-exact against the quantized numpy reference."""

import numpy as np
import pytest

from compiler.frontend import from_model
from compiler.frontend.inputs import synthetic_images
from compiler.frontend.resnet import build_resnet
from compiler.cpu_fallback.cost import CpuModel
from compiler.network import PartitionOptions, execute, partition
from compiler.network.report import summarise
from compiler.quantize import quantize_graph, reference
from driver import open_device
from vdla.network import board_runtime
from vdla_hw.config import load_config


def quantized_resnet(depth, resolution, **options):
    graph = from_model(build_resnet(depth, resolution, calib_batch=2), f"resnet{depth}")
    return quantize_graph(graph, synthetic_images(2, resolution, 1), **options)


@pytest.fixture(scope="module")
def resnet18_32():
    return quantized_resnet(18, 32)


def test_default_placement_follows_the_paper(resnet18_32):
    placements = partition(resnet18_32, load_config("osdi18"))
    by_op = {}
    for node in resnet18_32.nodes:
        by_op.setdefault(node.op, set()).add(placements[node.name].target)
    assert placements["conv1"].target == "cpu" and "stem" in placements["conv1"].reason
    assert by_op["add"] == {"cpu"} and by_op["dense"] == {"cpu"} and by_op["maxpool"] == {"cpu"}
    assert sum(placements[n.name].target == "vdla" for n in resnet18_32.nodes) == 19  # every conv but the stem
    assert all(placements[n.name].reason for n in resnet18_32.nodes)


def test_options_move_stem_adds_and_classifier(resnet18_32):
    options = PartitionOptions(stem_on_vdla=True, add_on_vdla=True, fc_on_vdla=True)
    placements = partition(resnet18_32, load_config("osdi18"), options)
    assert placements["fc"].target == "cpu" and "int32" in placements["fc"].reason  # a wide (int32) last layer
    # adds quantized for the CPU rescale by multipliers, which the ALU (shifts only) cannot
    assert placements["layer1.0.add"].target == "cpu" and "multipliers" in placements["layer1.0.add"].reason
    int8_logits = quantized_resnet(18, 32, wide_output=False, add_scales=False)
    placements = partition(int8_logits, load_config("osdi18"), options)
    for node in int8_logits.nodes:
        if node.op in ("conv", "add", "dense"):
            assert placements[node.name].target == "vdla", node.name
    assert "padded" in placements["conv1"].reason


@pytest.mark.parametrize("preset", ["osdi18", "vta-pynq"])
def test_resnet18_executor_vs_quantized_reference(resnet18_32, preset):
    x = synthetic_images(1, 32, 5)
    device = open_device("sim", preset)
    result = execute(resnet18_32, x, partition(resnet18_32, device.config), device, cpu_model=CpuModel(),
                     runtime=board_runtime())
    np.testing.assert_array_equal(result.output, reference.forward(resnet18_32, x))
    totals = summarise(result.records)
    assert totals["offloaded_speedup"] > 1 and totals["amdahl_bound"] > totals["speedup"]
    assert all(r.cycles > 0 and r.host_seconds > 0 for r in result.records if r.placement == "vdla")


def test_executor_without_a_cpu_model_models_nothing(resnet18_32):
    """The board runs the executor without a model (it measures): no invented times."""
    device = open_device("sim", "osdi18")
    result = execute(resnet18_32, synthetic_images(1, 32, 5), partition(resnet18_32, device.config), device)
    assert all(r.cpu_seconds == 0 and r.host_seconds == 0 and r.cpu_basis == "not modelled" for r in result.records)
    with pytest.raises(ValueError, match="needs the runtime profile"):
        execute(resnet18_32, synthetic_images(1, 32, 5), {}, device, cpu_model=CpuModel())


def test_everything_on_vdla_is_still_bit_exact():
    q = quantized_resnet(18, 32, wide_output=False, add_scales=False)
    x = synthetic_images(1, 32, 6)
    device = open_device("sim", "osdi18")
    options = PartitionOptions(stem_on_vdla=True, add_on_vdla=True, fc_on_vdla=True)
    placements = partition(q, device.config, options)
    assert {placements[n.name].target for n in q.nodes if n.op in ("conv", "add", "dense")} == {"vdla"}
    result = execute(q, x, placements, device)
    np.testing.assert_array_equal(result.output, reference.forward(q, x))


def test_resnet34_executor_vs_quantized_reference():
    q = quantized_resnet(34, 32)
    x = synthetic_images(1, 32, 7)
    device = open_device("sim", "osdi18")
    result = execute(q, x, partition(q, device.config), device)
    np.testing.assert_array_equal(result.output, reference.forward(q, x))


def test_macs_count_the_gemm_lanes_only_where_the_device_reports_them(resnet18_32):
    """The padded stem on the simulator: 16/3 lane MACs per useful MAC. A device whose counters
    carry no GEMM activity (the rtl and pynq backends) leaves macs at the op's own MACs."""
    device = open_device("sim", load_config("osdi18"))

    class NoGemmCounters:
        config, target = device.config, "no-gemm-counters"

        def run(self, bundle):
            result = device.run(bundle)
            result.counters.pop("gemm_utilization")
            return result

    placements = partition(resnet18_32, device.config, PartitionOptions(stem_on_vdla=True))
    x = synthetic_images(1, 32, 5)
    for dev, lanes in ((device, 16), (NoGemmCounters(), 3)):
        stem = next(r for r in execute(resnet18_32, x, placements, dev).records if r.name == "conv1")
        assert stem.placement == "vdla" and stem.macs * 3 == stem.useful_macs * lanes
