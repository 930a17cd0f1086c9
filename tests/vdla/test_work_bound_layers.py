"""`vdla run` of ONNX graphs (onnx.helper) with the heaviest accelerator layers of torchvision's
VGG-11 (BatchNorm) at 224 and fcn_resnet50 at 160 runs within the simulator's default work bound,
which prices each GEMM from the plan that will run (vdla_sim/cost.py; issue 45): the slowest-plan
price refused them. `--placement all` keeps the conv on the accelerator; no work option is given.
A hostile long program is still refused in one line with exit 2 (tests/vdla/test_user_errors.py,
tests/sim/test_work_pricing.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytestmark = pytest.mark.slow  # each imports, calibrates and simulates a 1.9-3.8 G-MAC conv

ROOT = Path(__file__).resolve().parents[2]


def conv_model(channels_in: int, channels_out: int, size: int) -> onnx.ModelProto:
    """x (1, C, size, size) -> Conv 3x3 pad 1 -> Relu -> MaxPool 2x2 (a last op, so the conv's
    output is int8 and it can run on the accelerator)."""
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((channels_out, channels_in, 3, 3)) / np.sqrt(9 * channels_in)).astype(np.float32)
    bias = (0.1 * rng.standard_normal(channels_out)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    graph = helper.make_graph(nodes, "heaviest", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                 [1, channels_in, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("name, shape", [("vgg11_bn 3x3 256->256 at 56", (256, 256, 56)),
                                         ("fcn_resnet50 head 3x3 2048->512 at 20", (2048, 512, 20))])
def test_vdla_run_of_the_heaviest_layer_needs_no_work_option(tmp_path, name, shape):
    path = tmp_path / "layer.onnx"
    onnx.save(conv_model(*shape), str(path))
    done = subprocess.run([sys.executable, "-m", "vdla", "run", str(path), "--placement", "all"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "running 1 ops on VDLA" in done.stderr  # the progress line (stderr): the conv ran on the simulator
    assert "bit exact vs the quantized numpy reference: True" in done.stdout
