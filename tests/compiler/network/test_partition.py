"""Placement labels from the op (compiler.network.partition): "stem" only for the conv reading
the network's input; a narrow conv elsewhere is named by its kind (pointwise, 3x3, depthwise),
never "stem" because it has few channels (mobilenet_v2's 8-channel conv was)."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import from_model
from compiler.network import PartitionOptions, partition
from compiler.network.partition import conv_kind, reads_network_input
from compiler.quantize import quantize_graph
from vdla_hw.config import load_config


def narrow_net():
    """stem 3->16 3x3, pointwise 16->8, pointwise 8->16, 3x3 16->8, 3x3 8->16, depthwise 16."""
    rng = np.random.default_rng(0)
    layers = [("stem", 3, 16, 3, 1), ("project", 16, 8, 1, 1), ("expand", 8, 16, 1, 1), ("narrow", 16, 8, 3, 1),
              ("wide", 8, 16, 3, 1), ("dw", 1, 16, 3, 16)]
    nodes, inits, x = [], [], "input"
    for name, ic, oc, k, groups in layers:
        weight = (rng.standard_normal((oc, ic, k, k)) * np.sqrt(2 / (ic * k * k))).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f"{name}.w"))
        nodes.append(helper.make_node("Conv", [x, f"{name}.w"], [name], name=name, kernel_shape=[k, k],
                                      pads=[k // 2] * 4, group=groups))
        x = name
    graph = helper.make_graph(nodes, "narrow", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    calibration = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    return quantize_graph(from_model(model, "narrow"), calibration)


def test_only_the_conv_reading_the_input_is_the_stem():
    q = narrow_net()
    config = load_config("osdi18")
    placements = partition(q, config)
    reasons = {name: placements[name].reason for name in ("stem", "project", "expand", "narrow", "wide", "dw")}
    assert [name for name, why in reasons.items() if "stem:" in why] == ["stem"]
    assert reasons["stem"].startswith("3-channel stem: fills 3 of 16 GEMM input lanes (paper: CPU)")
    assert reasons["expand"].startswith("pointwise (1x1) convolution of 8 input channels: fills 8 of 16 GEMM input lanes")
    assert reasons["wide"].startswith("3x3 convolution of 8 input channels: fills 8 of 16 GEMM input lanes")
    assert reasons["dw"].startswith("depthwise convolution: 1 input channel(s) per group")
    assert {placements[name].target for name in ("stem", "expand", "wide", "dw")} == {"cpu"}
    assert placements["project"].target == placements["narrow"].target == "vdla"
    moved = partition(q, config, PartitionOptions(stem_on_vdla=True))  # the option still moves every narrow conv
    assert {moved[name].target for name in ("stem", "expand", "wide")} == {"vdla"}


def test_conv_kind_and_input_come_from_the_op():
    q = narrow_net()
    nodes = {n.name: n for n in q.nodes}
    assert [conv_kind(nodes[name]) for name in ("stem", "project", "dw")] == [
        "3x3 convolution", "pointwise (1x1) convolution", "depthwise convolution"]
    assert [name for name in nodes if nodes[name].op == "conv" and reads_network_input(nodes[name], q)] == ["stem"]
