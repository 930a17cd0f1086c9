"""`vdla run` with the user's files: --calibration, --images, --input, --output, --input-shape,
--normalize, --calibration-method; the JSON names the input used; bad files are one-line errors."""

import json

import numpy as np
import onnx
import pytest
from PIL import Image

from compiler.frontend import from_model
from compiler.quantize import quantize_graph, reference
from tests.compiler.frontend.exporter_graphs import mobilenet_like, mlp_like, resnet_like
from tests.vdla.test_run import one_line_error, run
from vdla.inputs import IMAGENET, load_image

SHAPE = (1, 3, 24, 32)  # rectangular


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    work = tmp_path_factory.mktemp("inputs")
    onnx.save(mobilenet_like(shape=SHAPE), str(work / "m.onnx"))
    rng = np.random.default_rng(0)
    np.save(work / "x.npy", rng.standard_normal(SHAPE).astype(np.float32))
    np.savez(work / "cal.npz", inputs=rng.standard_normal((5,) + SHAPE[1:]).astype(np.float32))
    (work / "images").mkdir()
    for i in range(3):
        pixels = (rng.random((40 + 10 * i, 50, 3)) * 255).astype(np.uint8)
        Image.fromarray(pixels).save(work / "images" / f"im{i}.{'png' if i % 2 else 'jpg'}")
    return work


def test_input_output_and_calibration_files(capsys, files):
    out_path = files / "y.npy"
    code, out, err = run(capsys, "run", files / "m.onnx", "--calibration", files / "cal.npz", "--input",
                         files / "x.npy", "--output", out_path, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["bit_exact"] and report["input"]["source"] == str(files / "x.npy")
    # the user's five inputs: four calibrate, the last is held out for the report (not synthetic ones)
    assert report["quantization"]["calibration"] == {"source": f"{files / 'cal.npz'} (the first 4 of 5)", "count": 4,
                                                     "shape": list(SHAPE[1:]), "method": "mse"}
    assert report["quantization"]["test_source"] == f"{files / 'cal.npz'} (the last 1 of 5, held out from calibration)"
    assert report["quantization"]["test_inputs"] == 1
    # The written output is the int8 network's output, dequantized, on exactly that input.
    graph = from_model(mobilenet_like(shape=SHAPE), "m")
    q = quantize_graph(graph, np.load(files / "cal.npz")["inputs"][:4])
    want = q.dequantize_output(reference.forward(q, np.load(files / "x.npy")))
    got = np.load(out_path)
    assert got.dtype == np.float32 and got.shape == (1, 8)
    np.testing.assert_array_equal(got, want)


def test_images_are_classified_by_both_models(capsys, files):
    code, out, err = run(capsys, "run", files / "m.onnx", "--images", files / "images", "--calibration",
                         files / "images", "--calibration-method", "percentile", "--json")
    assert code == 0, err
    q = json.loads(out)["quantization"]
    assert [row["file"] for row in q["images"]] == ["im0.jpg", "im1.png", "im2.jpg"]
    assert q["test_inputs"] == 3 and 0 <= q["top1_agreement"] <= 1 and q["calibration"]["method"] == "percentile"
    assert json.loads(out)["input"]["files"] == ["im0.jpg"]


def test_images_are_prepared_as_torchvision_does(files):
    """Resize so H x W is covered with the 256/224 margin, centre crop, [0, 1], normalise."""
    x = load_image(files / "images" / "im1.png", SHAPE, IMAGENET)
    assert x.shape == SHAPE[1:] and x.dtype == np.float32
    raw = load_image(files / "images" / "im1.png", SHAPE, None)
    assert 0 <= raw.min() and raw.max() <= 1
    np.testing.assert_allclose(x[0], (raw[0] - 0.485) / 0.229, rtol=1e-5)


def test_dynamic_dimensions_need_input_shape(capsys, tmp_path):
    model = resnet_like(shape=(1, 3, 16, 20))
    for axis in (0, 2, 3):
        model.graph.input[0].type.tensor_type.shape.dim[axis].dim_param = ["batch", "", "h", "w"][axis]
    onnx.save(model, str(tmp_path / "dyn.onnx"))
    one_line_error(capsys, "run", tmp_path / "dyn.onnx", words="dynamic dimensions: axis 0 ('batch')")
    code, out, err = run(capsys, "run", tmp_path / "dyn.onnx", "--input-shape", "1,3,20,28", "--json")
    assert code == 0, err
    assert json.loads(out)["input"]["shape"] == [3, 20, 28]


def test_two_dimensional_model(capsys, tmp_path):
    onnx.save(mlp_like(), str(tmp_path / "mlp.onnx"))
    code, out, err = run(capsys, "run", tmp_path / "mlp.onnx", "--json")
    assert code == 0, err
    assert json.loads(out)["bit_exact"] and json.loads(out)["output_shape"] == [2, 6]


@pytest.mark.parametrize("argv, words", [
    (["--input", "bad_shape.npy"], "is neither the model's input (1, 3, 24, 32)"),
    (["--calibration", "two.npz"], "the .npz holds 2 arrays"),
    (["--input-shape", "1,3,9,9"], "--input-shape gives 9 for axis 2"),
    (["--calibration", "nan.npy"], "contains NaN or infinite values"),
    (["--images", "empty"], "no image files"),
])
def test_bad_input_files_are_one_line_errors(capsys, files, argv, words):
    np.save(files / "bad_shape.npy", np.zeros((3, 24, 31), np.float32))
    np.savez(files / "two.npz", a=np.zeros(SHAPE, np.float32), b=np.zeros(SHAPE, np.float32))
    np.save(files / "nan.npy", np.full(SHAPE, np.nan, np.float32))
    (files / "empty").mkdir(exist_ok=True)
    argv = [str(files / a) if a.endswith((".npy", ".npz")) or a == "empty" else a for a in argv]
    one_line_error(capsys, "run", files / "m.onnx", *argv, words=words)


def test_missing_input_file_is_a_one_line_error(capsys, files):
    one_line_error(capsys, "run", files / "m.onnx", "--input", files / "nope.npy", words="nope.npy: no such file")
