"""Networks of several outputs (issue 27, item 2): an FPN-like backbone whose outputs are feature
maps at several scales, one of them also read by later nodes, listed out of node order. Each output
is imported, checked against onnxruntime, quantized (int8, not wide), run bit-exact, reported with
its own error and sha256, written by ``--output`` and carried by a deployment package."""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import float_ref, from_model, load_onnx
from compiler.frontend.graph import ModelError
from compiler.frontend.inputs import synthetic_images
from compiler.network.executor import outputs_sha256
from compiler.network.package import network_files, output_blob, run_files
from compiler.quantize import reference
from tests.compiler.frontend.int8_run import run_int8
from vdla.inputs import synthetic
from vdla.network import is_classifier_output, quantization_report

ROOT = Path(__file__).resolve().parents[3]
OUTPUTS = ["p1", "c2", "c1", "pool"]  # the model's order: not the nodes' order


def fpn_model(outputs=OUTPUTS, logits: bool = False):
    """conv+relu (c1, also read by two convs) -> stride-2 conv (c2) -> nearest upsample added to a
    lateral 1x1 conv of c1 (p1); maxpool of c2 (pool); ``logits``: also a classifier head."""
    rng = np.random.default_rng(3)
    w = lambda name, *shape: numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)  # noqa: E731
    inits = [w("w1", 16, 3, 3, 3), w("w2", 16, 16, 3, 3), w("lat", 16, 16, 1, 1), w("fc", 10, 16), w("fcb", 10),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["c1"], name="relu1"),
             helper.make_node("Conv", ["c1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Resize", ["c2", "", "scales"], ["up"], name="up", mode="nearest"),
             helper.make_node("Conv", ["c1", "lat"], ["l1"], name="lateral", kernel_shape=[1, 1]),
             helper.make_node("Add", ["up", "l1"], ["p1"], name="merge"),
             helper.make_node("MaxPool", ["c2"], ["pool"], name="pool", kernel_shape=[1, 1], strides=[2, 2])]
    if logits:
        nodes += [helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
                  helper.make_node("Flatten", ["g"], ["f"], name="flat"),
                  helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "fpn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_every_output_matches_onnxruntime_in_the_models_order():
    model = fpn_model()
    graph = from_model(model)
    assert graph.outputs == tuple(OUTPUTS)
    x = synthetic_images(2, 16, 5)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = [np.concatenate(parts) for parts in zip(*(session.run(None, {"x": t[None]}) for t in x))]
    ours = float_ref.forward_all(graph, x)
    assert [o.shape for o in ours] == [t.shape for t in theirs] == [(2, 16, 16, 16), (2, 16, 8, 8), (2, 16, 16, 16),
                                                                     (2, 16, 4, 4)]
    for got, want in zip(ours, theirs):
        assert np.abs(got - want).max() < 1e-4
    with pytest.raises(ValueError, match="4 outputs"):
        float_ref.forward(graph, x)
    with pytest.raises(ValueError, match="4 outputs"):
        graph.output


def test_int8_run_is_bit_exact_on_every_output_and_outputs_stay_int8():
    q, placements, x, result = run_int8(from_model(fpn_model()), 16)
    assert q.outputs == tuple(OUTPUTS)
    producers = {n.output: n for n in q.nodes}
    assert not any(producers[o].attrs.get("wide") for o in q.outputs)  # feature maps: int8, so on the accelerator
    assert placements["conv2"].target == placements["lateral"].target == "vdla"
    assert outputs_sha256(result.outputs[:1]) == __import__("hashlib").sha256(result.outputs[0].tobytes()).hexdigest()


def test_quantization_report_gives_each_outputs_error_and_top1_only_for_a_classifier():
    graph = from_model(fpn_model(outputs=["c2", "logits"], logits=True))
    q = run_int8(graph, 16)[0]
    report = quantization_report(graph, q, synthetic(graph.shapes["x"], 3, 2))
    by_name = {o["name"]: o for o in report["outputs"]}
    assert [o["shape"] for o in report["outputs"]] == [[1, 16, 8, 8], [1, 10]]
    logits = next(o for o in report["outputs"] if o["shape"] == [1, 10])
    features = next(o for o in report["outputs"] if o["shape"] == [1, 16, 8, 8])
    assert "top1_agreement" in logits and "top1_agreement" not in features
    assert report["top1_agreement"] == logits["top1_agreement"]
    worst = max(report["outputs"], key=lambda o: o["relative_error"])
    assert report["worst_output"] == worst["name"] and report["output_relative_error"] == worst["relative_error"]
    assert all(0 < o["relative_error"] < 0.5 for o in by_name.values())
    assert is_classifier_output((1, 10)) and is_classifier_output((1, 10, 1, 1)) and not is_classifier_output((1, 8, 8, 8))
    single = from_model(fpn_model(outputs=["c2"]))
    report = quantization_report(single, run_int8(single, 16)[0], synthetic(single.shapes["x"], 2, 2))
    assert report["top1_agreement"] is None  # a feature map has no "top-1"


def test_package_answers_one_blob_per_output_with_the_runs_sha():
    from driver import open_device

    q, placements, x, result = run_int8(from_model(fpn_model()), 16)
    device = open_device("sim", "osdi18")
    try:
        files = network_files(q, x, placements, device.config, arm_library=False)
        assert json.loads(files["graph.json"])["outputs"] == list(q.outputs)
        reply, blobs = run_files(files, device)
    finally:
        device.close()
    got = [np.load(io.BytesIO(blobs[output_blob(k)]), allow_pickle=False) for k in range(4)]
    assert output_blob(4) not in blobs and output_blob(0) == "output.npy"
    assert all(np.array_equal(g, w) for g, w in zip(got, reference.forward_all(q, x)))
    assert reply["output_sha256"] == outputs_sha256(got) == outputs_sha256(result.outputs)


def test_vdla_run_lists_every_output_and_writes_them_as_npz(tmp_path):
    path = tmp_path / "fpn.onnx"
    onnx.save(fpn_model(), str(path))
    out = tmp_path / "out.npz"
    done = subprocess.run([sys.executable, "-m", "vdla", "run", str(path), "--json", "--output", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["bit_exact"] and [o["shape"] for o in report["outputs"]] == \
        [[1, 16, 16, 16], [1, 16, 8, 8], [1, 16, 16, 16], [1, 16, 4, 4]]
    assert len({o["sha256"] for o in report["outputs"]}) == 4
    assert [o["name"] for o in report["quantization"]["outputs"]] == [o["name"] for o in report["outputs"]]
    assert report["quantization"]["top1_agreement"] is None
    saved = np.load(out, allow_pickle=False)
    assert sorted(saved.files) == sorted(["names", *(f"output_{k}" for k in range(4))])
    assert list(saved["names"]) == [o["name"] for o in report["outputs"]]
    assert saved["output_3"].shape == (1, 16, 4, 4)
    text = subprocess.run([sys.executable, "-m", "vdla", "run", str(path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert text.returncode == 0 and "top-1" not in text.stdout
    lines = [line for line in text.stdout.splitlines() if line.startswith("  output ")]
    assert [line.split()[1:3] for line in lines] == [[o["name"], "x".join(map(str, o["shape"])) + ":"]
                                                     for o in report["outputs"]]


def test_an_output_that_is_a_constant_or_missing_is_refused():
    model = fpn_model()
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((1, 2), np.float32), "k"))
    model.graph.output.append(helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 2]))
    with pytest.raises(ModelError, match="graph output 'k' is a constant"):
        from_model(model)
    model = fpn_model()
    del model.graph.output[:]
    with pytest.raises(ModelError, match="has no output"):
        from_model(model)


def test_vdla_run_max_work_bounds_each_accelerator_program(tmp_path):
    """``--max-work`` is the sim device's per-program bound (resnet18_fpn's 56x56 conv passes the
    default): one line, exit 2, when a program needs more; refused for another target."""
    path = tmp_path / "fpn.onnx"
    onnx.save(fpn_model(), str(path))
    run = lambda *extra: subprocess.run([sys.executable, "-m", "vdla", "run", str(path), "--placement", "all", *extra],  # noqa: E731
                                        cwd=ROOT,
                                        capture_output=True, text=True, timeout=600)
    small = run("--max-work", "1000")
    error = small.stderr.splitlines()[-1]  # after the progress lines, one error line
    assert small.returncode == 2 and error.startswith("vdla: error: ") and small.stderr.count("error") == 1
    assert "past the limit of 1,000 multiply-add equivalents" in error and "--max-work" in error
    assert run("--max-work", "100000000").returncode == 0
    other = run("--max-work", "1000", "--target", "rtl")
    assert other.returncode == 2 and "--max-work bounds the simulator's work" in other.stderr
