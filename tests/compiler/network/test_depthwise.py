"""Depthwise and narrow grouped convs on the GEMM core (``--depthwise-on-vdla``): several groups
to a layer with a block-diagonal kernel (compiler.network.vdla_ops.block_diagonal), bit exact
against the quantized numpy reference on the simulator, and their placement reasons."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.cpu_fallback.cost import CpuModel
from compiler.frontend import from_model
from compiler.network import PartitionOptions, execute, partition
from compiler.network.vdla_ops import PACK_LANES, block_diagonal, groups_per_part, vdla_parts
from compiler.quantize import quantize_graph, reference
from driver import open_device
from vdla.network import board_runtime
from vdla_hw.config import load_config


@pytest.mark.parametrize("groups, cg, og", [(40, 1, 1), (6, 1, 2), (8, 4, 4), (3, 2, 1)])
def test_a_block_diagonal_conv_is_the_grouped_conv(groups, cg, og):
    """One conv over the groups' channels with the block-diagonal kernel sums exactly what the
    grouped conv does, for depthwise, channel-multiplier and narrow grouped kernels."""
    rng = np.random.default_rng(groups)
    x = rng.integers(-128, 128, (1, groups * cg, 9, 7), dtype=np.int8)
    w = rng.integers(-127, 128, (groups * og, cg, 3, 3), dtype=np.int8)
    bias = rng.integers(-999, 999, groups * og, dtype=np.int32)
    want = reference.conv2d(x, w, bias, stride=1, pad=1, groups=groups, shift=4, wide=True)
    got = reference.conv2d(x, block_diagonal(w, groups), bias, stride=1, pad=1, groups=1, shift=4, wide=True)
    np.testing.assert_array_equal(got, want)


def test_groups_fill_the_lanes_and_a_wide_group_stays_alone():
    assert groups_per_part(96, 1) == PACK_LANES == 16
    assert groups_per_part(8, 4) == 4 and groups_per_part(3, 2) == 3
    assert groups_per_part(2, 16) == groups_per_part(4, 32) == groups_per_part(1, 1) == 1


def _depthwise_model(channels: int = 40, k: int = 7, stride: int = 1):
    """pointwise 16 -> ``channels``, depthwise k x k (ConvNeXt's 7x7 by default), pointwise back to 16."""
    rng = np.random.default_rng(3)
    layers = [("expand", 16, channels, 1, 1, 1), ("dw", 1, channels, k, channels, stride),
              ("project", channels, 16, 1, 1, 1)]
    nodes, inits, x = [], [], "input"
    for name, ic, oc, kk, groups, s in layers:
        weight = (rng.standard_normal((oc, ic, kk, kk)) * np.sqrt(2 / (ic * kk * kk))).astype(np.float32)
        inits += [numpy_helper.from_array(weight, f"{name}.w"),
                  numpy_helper.from_array(rng.standard_normal(oc).astype(np.float32) * 0.1, f"{name}.b")]
        nodes.append(helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [name], name=name,
                                      kernel_shape=[kk, kk], pads=[kk // 2] * 4, group=groups, strides=[s, s]))
        x = name
    graph = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 16, 10, 12])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def depthwise_net(channels: int = 40, k: int = 7, stride: int = 1):
    calibration = np.random.default_rng(4).standard_normal((2, 16, 10, 12)).astype(np.float32)
    return quantize_graph(from_model(_depthwise_model(channels, k, stride), "dw"), calibration)


@pytest.mark.parametrize("k, stride", [(7, 1), (3, 2)])
def test_a_depthwise_conv_on_the_gemm_core_is_bit_exact(k, stride):
    q = depthwise_net(40, k, stride)
    device = open_device("sim", "osdi18")
    try:
        placements = partition(q, device.config, PartitionOptions(depthwise_on_vdla=True))
        assert placements["dw"].target == "vdla"
        assert placements["dw"].reason.startswith("depthwise convolution as 3 block-diagonal GEMM(s) of 16 channels")
        node = next(n for n in q.nodes if n.name == "dw")
        parts = vdla_parts(node, q.shapes[node.inputs[0]], q.shapes[node.output])
        assert [(p.layer.ic, p.groups, p.key) for p in parts] == [(16, 16, "dw/g0"), (16, 16, "dw/g1"), (8, 8, "dw/g2")]
        x = np.random.default_rng(k).standard_normal((1, 16, 10, 12)).astype(np.float32)
        result = execute(q, x, placements, device, cpu_model=CpuModel(), runtime=board_runtime())
    finally:
        device.close()
    np.testing.assert_array_equal(result.output, reference.forward(q, x))


def test_without_the_option_a_depthwise_conv_stays_on_the_cpu_and_says_how_to_move_it():
    q = depthwise_net()
    config = load_config("osdi18")
    reason = partition(q, config)["dw"].reason
    assert partition(q, config)["dw"].target == "cpu"
    assert reason.startswith("depthwise convolution: 1 input channel(s) per group would fill 1 of 16")
    assert reason.endswith("(--depthwise-on-vdla: block-diagonal GEMMs)")
    cost = partition(q, config, PartitionOptions(depthwise_on_vdla=True), placement="cost", cpu_model=CpuModel(),
                     runtime=board_runtime())["dw"]
    assert cost.cost is not None  # the cost placement weighs the block-diagonal GEMMs against the CPU kernel


def test_a_deployment_package_runs_the_block_diagonal_programs_exact(tmp_path):
    """``vdla deploy --depthwise-on-vdla``'s package: one bundle per block-diagonal layer, each
    run by the board's executor on a sim device, the output the quantized reference's."""
    import onnx

    from tests.fuzz.test_names_and_values import assert_package_runs_exact
    from vdla.deploy import build_package
    from vdla.network import prepare

    path = tmp_path / "dw.onnx"
    onnx.save(_depthwise_model(), str(path))
    p = prepare(str(path), options=PartitionOptions(depthwise_on_vdla=True), input_shape=(1, 16, 10, 12))
    files = build_package(p, model="dw", arm_library=False, progress=lambda m: None)
    assert sorted(n for n in files if n.startswith("bundles/dw")) == [f"bundles/dw/g{g}.npz" for g in range(3)]
    assert_package_runs_exact(files, p)
