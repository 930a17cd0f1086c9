"""Issue 45, finding 16: `vdla deploy` of a network of ~900 outputs ran it on the board, then
failed: the answer listed one blob per output, and the frame header (about 120 bytes a blob)
passed its 64 KiB limit ("frame header of 119556 bytes exceeds 65536" for 1,000 outputs). The
outputs now travel as one blob (``vdla.deploy.answer_blobs``), so the answer's header does not
grow with them."""

import contextlib
import io
import json

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler.network.package import LAYERS, npy_bytes
from driver.package import PackageError
from driver.protocol import request
from tests.driver.serving import KEY, serving
from vdla.cli import main
from vdla.deploy import OUTPUTS_BLOB, answer_outputs, build_package
from vdla.network import prepare

OUTPUTS = 1000


def many_outputs_model(path, n: int = OUTPUTS) -> str:
    """An ONNX chain of ``n`` ReLUs on a 1x4 input, every one of them a graph output."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x" if k == 0 else f"r{k - 1}"], [f"r{k}"], name=f"relu{k}") for k in range(n)]
    outs = [helper.make_tensor_value_info(f"r{k}", TensorProto.FLOAT, [1, 4]) for k in range(n)]
    model = helper.make_model(helper.make_graph(nodes, "many", [x], outs, []),
                              opset_imports=[helper.make_opsetid("", 17)])
    path.write_bytes(model.SerializeToString())
    return str(path)


def test_a_network_of_a_thousand_outputs_is_answered_in_one_blob(tmp_path):
    model = many_outputs_model(tmp_path / "many.onnx")
    key_file = tmp_path / "keys" / "serve.key"
    key_file.parent.mkdir(mode=0o700)
    key_file.write_text(KEY.hex() + "\n")
    key_file.chmod(0o600)
    files = build_package(prepare(model, config="tiny"), model="many", arm_library=False, progress=lambda m: None)
    with serving("tiny") as (_, address):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["deploy", model, "--board", address, "--key-file", str(key_file), "--config", "tiny",
                           "--no-arm-library", "--json"])
        assert status == 0, err.getvalue()[-500:]
        _, blobs, _ = request(address, {"op": "run"}, files, key=KEY, timeout_s=120)
    report = json.loads(out.getvalue())
    assert report["bit_exact"] is True and len(report["layers"]) == OUTPUTS + 1  # the quantize op and the ReLUs
    assert set(blobs) == {OUTPUTS_BLOB, LAYERS}  # two blobs, whatever the number of outputs
    outputs = answer_outputs(blobs, OUTPUTS, address)
    assert len(outputs) == OUTPUTS and all(o.shape == (1, 4) for o in outputs)
    assert all(np.array_equal(outputs[0], o) for o in outputs)  # ReLU of a ReLU: the same tensor each time


def test_an_answer_without_its_outputs_is_one_line():
    buf = io.BytesIO()
    np.savez(buf, **{"0": np.zeros(3, np.int8)})
    with pytest.raises(PackageError, match=r"^b:9: the server's outputs\.npz holds 1 arrays, not the network's 2 "
                                           r"outputs$"):
        answer_outputs({OUTPUTS_BLOB: buf.getvalue()}, 2, "b:9")
    with pytest.raises(PackageError, match=r"^b:9: .*outputs\.npz"):
        answer_outputs({}, 2, "b:9")
    with pytest.raises(PackageError, match=r"^b:9: .*output\.npy"):
        answer_outputs({OUTPUTS_BLOB: buf.getvalue()}, 1, "b:9")
    assert answer_outputs({"output.npy": npy_bytes(np.ones(2, np.int8))}, 1, "b:9")[0].tolist() == [1, 1]
