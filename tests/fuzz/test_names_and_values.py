"""Names and values from the model that must not steer the tools (issue 45, round three).

Finding 9: a node named like another op's program (``c#g1``, group 1 of grouped conv ``c`` in
the old ``name#g<k>`` keys) ran the other op's program. Program keys
(``compiler.network.vdla_ops.bundle_key``) escape node names, in the loaded model, in a
package's ``bundles/`` and in the driver's check of file names.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import onnx
import pytest
from hypothesis import given, strategies as st
from onnx import TensorProto, helper, numpy_helper

from compiler.network.vdla_ops import bundle_key
from driver.package import _NAME
from tests.fuzz.test_hostile_files import SECONDS, base_seconds, vdla  # noqa: F401 (base_seconds: a fixture)


def _init(name: str, array: np.ndarray):
    return numpy_helper.from_array(np.asarray(array, np.float32), name)


def grouped_model(second: str) -> onnx.ModelProto:
    """Grouped conv ``c`` (2 groups of 16 channels), then a 1x1 conv named ``second`` with
    another program (input 32 channels, not 16), then a last conv (kept on the CPU: int32 out)."""
    rng = np.random.default_rng(9)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="c", group=2, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["b"], name=second),
             helper.make_node("Relu", ["b"], ["b2"], name="relu2"),
             helper.make_node("Conv", ["b2", "w2"], ["y"], name="last")]
    inits = [_init("w1", rng.normal(size=(32, 16, 3, 3)) * 0.1), _init("w2", rng.normal(size=(32, 32, 1, 1)) * 0.1)]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


FORGED = ["c#g1", "c/g1", "c+2Fg1", "c/../g1", "..", "/conv1/Conv"]


@given(st.text(max_size=12), st.text(max_size=12), st.none() | st.integers(0, 3), st.none() | st.integers(0, 3))
def test_bundle_keys_of_distinct_ops_differ_and_are_package_file_names(a, b, ga, gb):
    """bundle_key is injective over (name, group), and every key makes a file name the package
    check takes (segments of [A-Za-z0-9_.+-], never '.' or '..')."""
    ka, kb = bundle_key(a, ga), bundle_key(b, gb)
    assert (ka == kb) == ((a, ga) == (b, gb))
    for key in (ka, kb):
        name = f"bundles/{key}.npz"
        assert _NAME.fullmatch(name) and ".." not in name.split("/") and "." not in key.split("/"), name


@pytest.mark.parametrize("name", FORGED)
def test_bundle_key_of_a_hostile_name_is_no_group_key(name):
    assert bundle_key(name) not in {bundle_key("c", g) for g in range(4)}
    assert re.fullmatch(r"[A-Za-z0-9_.+-]+", bundle_key(name)) and not bundle_key(name).startswith(".")


@pytest.mark.slow  # the whole CLI run: about 15 s under load
def test_vdla_run_of_a_node_named_like_a_group_runs_its_own_program(tmp_path):
    """The old keys gave node 'c#g1' the loaded program of group 1 of 'c': an input of 2048 bytes
    for a symbol of 1024, one error line, exit 2. Now each op runs its own, bit exact."""
    path = tmp_path / "m.onnx"
    onnx.save(grouped_model("c#g1"), str(path))
    code, err, _ = vdla("run", path, "--placement", "all", "--json")
    assert code == 0, err
    assert "c#g1" in err and "vdla: error" not in err


@pytest.mark.parametrize("name", ["c#g1", "/conv1/Conv"])
def test_package_of_a_node_named_like_a_group_runs_every_op_on_its_own_bundle(name, tmp_path):
    """Built, checked by the driver (file names) and run on a sim device's loaded model: the
    outputs are the quantized reference's. The old keys wrote two programs to one file
    ('bundles/c#g1.npz'), which the package check then refused as a bad name."""
    from vdla.deploy import build_package
    from vdla.network import prepare

    path = tmp_path / "m.onnx"
    onnx.save(grouped_model(name), str(path))
    p = prepare(str(path))
    files = build_package(p, model="m", arm_library=False, progress=lambda m: None)
    bundles = sorted(n for n in files if n.startswith("bundles/"))
    assert bundles == sorted(f"bundles/{k}.npz" for k in ("c/g0", "c/g1", bundle_key(name)))
    assert_package_runs_exact(files, p)
    assert json.loads(files["placements.json"])[name]["target"] == "vdla"


def assert_package_runs_exact(files: dict, p) -> None:
    """The package ``files`` of the prepared model ``p`` runs on a sim device, and its output
    is the quantized reference's for ``p``'s first test input, bit for bit."""
    from compiler.quantize import reference
    from driver import open_device
    from vdla.deploy import run_package

    device = open_device("sim", p.config)
    try:
        _, blobs = run_package(files, device)
    finally:
        device.close()
    got = np.load(io.BytesIO(blobs["output.npy"]), allow_pickle=False)
    assert np.array_equal(got, reference.forward_all(p.q, p.tests[:1])[0])


# --- finding 10: `vdla run --output F.npz` keys by position, names inside --------------------
HOSTILE_OUTPUTS = ["file", "allow_pickle", "../../x"]


def outputs_model(names=HOSTILE_OUTPUTS) -> onnx.ModelProto:
    """A conv then one output per name (a Relu, a Sigmoid, ...), each a differently computed map."""
    rng = np.random.default_rng(10)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])
    ops = ["Relu", "Sigmoid", "Tanh", "Relu"]
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", pads=[1, 1, 1, 1])]
    nodes += [helper.make_node(ops[k], ["t"], [name], name=f"out{k}") for k, name in enumerate(names)]
    outs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 16, 8, 8]) for name in names]
    weight = _init("w", rng.normal(size=(16, 16, 3, 3)) * 0.1)
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs, [weight]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def test_output_archive_keys_by_position_and_keeps_the_names(tmp_path):
    """save_outputs (``--output`` of a network of several outputs) on hostile names: every key
    is output_k, 'names' holds the names in order, and the archive holds no other member."""
    import types
    import zipfile

    from vdla.cmd_run import save_outputs

    arrays = [np.full((1, 2), k, np.float32) for k in range(len(HOSTILE_OUTPUTS))]
    report = types.SimpleNamespace(outputs_float=tuple(arrays), output_names=tuple(HOSTILE_OUTPUTS))
    path = tmp_path / "y.npz"
    with open(path, "wb") as fh:
        save_outputs(fh, report)
    assert sorted(zipfile.ZipFile(path).namelist()) == ["names.npy", "output_0.npy", "output_1.npy", "output_2.npy"]
    with np.load(path, allow_pickle=False) as saved:
        assert list(saved["names"]) == HOSTILE_OUTPUTS
        assert all(np.array_equal(saved[f"output_{k}"], a) for k, a in enumerate(arrays))


@pytest.mark.slow  # the whole CLI run: about 10 s under load
def test_vdla_run_output_archive_keys_by_position_and_keeps_the_names(tmp_path):
    """Output names 'file' (an internal error after the whole run), 'allow_pickle' (silently
    dropped) and '../../x' (a zip member of that path) as the archive's keys: now output_k, and
    the names in 'names'; the arrays are those of the JSON report (their SHA-256)."""
    import hashlib

    path, out = tmp_path / "m.onnx", tmp_path / "y.npz"
    onnx.save(outputs_model(), str(path))
    code, err, _ = vdla("run", path, "--json", "--output", out, cwd=tmp_path)
    assert code == 0, err
    with np.load(out, allow_pickle=False) as saved:
        assert sorted(saved.files) == ["names", "output_0", "output_1", "output_2"]
        assert list(saved["names"]) == HOSTILE_OUTPUTS
        arrays = [saved[f"output_{k}"] for k in range(3)]
    import zipfile

    assert sorted(zipfile.ZipFile(out).namelist()) == ["names.npy", "output_0.npy", "output_1.npy", "output_2.npy"]
    assert all(a.shape == (1, 16, 8, 8) and a.dtype == np.float32 for a in arrays)
    assert len({hashlib.sha256(a.tobytes()).hexdigest() for a in arrays}) == 3


# --- finding 11: finite constants that compute inf or NaN; axes that wrap -------------------
def _conv_then(node, inits=(), opset=13) -> onnx.ModelProto:
    """x (1x4x4x4) -> conv 'conv' (3x3, padded) -> ``node`` (reading 't', writing 'y')."""
    rng = np.random.default_rng(11)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"], name="conv", pads=[1, 1, 1, 1]), node]
    graph = helper.make_graph(nodes, "g", [x], [y], [_init("w", rng.normal(size=(4, 4, 3, 3)) * 0.1), *inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


BIG = 2 ** 40


def _reducemean_computed_axes() -> onnx.ModelProto:
    """ReduceMean (opset 18) over axes [2**40 + 2, 3] computed by an Add of two initializers (onnx's
    shape inference checks the axes of an initializer, not computed ones; they wrapped to [2, 3])."""
    model = _conv_then(helper.make_node("ReduceMean", ["t", "ax"], ["y"], name="rm"), opset=18)
    model.graph.node.insert(1, helper.make_node("Add", ["a1", "a2"], ["ax"], name="axes"))
    model.graph.initializer.extend([numpy_helper.from_array(np.array([BIG, 3], np.int64), "a1"),
                                    numpy_helper.from_array(np.array([2, 0], np.int64), "a2")])
    return model


HOSTILE_VALUES = {
    # name: (model, the node refused, words of the reason)
    "batchnorm-zero-variance": (_conv_then(helper.make_node("BatchNormalization", ["t", "s", "b", "m", "v"], ["y"],
                                                            name="bn", epsilon=0.0),
                                           [_init("s", [1] * 4), _init("b", [0] * 4), _init("m", [0] * 4),
                                            _init("v", [1, 0, 1, 1])]),
                                "bn", ["variance + epsilon is 0", "channel 1"]),
    "div-by-1e-45": (_conv_then(helper.make_node("Div", ["t", "d"], ["y"], name="div"), [_init("d", [1e-45])]),
                     "div", ["scale is not finite in float32"]),
    "leakyrelu-alpha-inf": (_conv_then(helper.make_node("LeakyRelu", ["t"], ["y"], name="leaky", alpha=float("inf"))),
                            "leaky", ["alpha is not finite in float32"]),
    "softmax-axis-2**40": (_conv_then(helper.make_node("Softmax", ["t"], ["y"], name="sm", axis=BIG)),
                           "sm", [f"axis {BIG} is outside [-4, 3]"]),
    "concat-axis-2**40+1": (_conv_then(helper.make_node("Concat", ["t", "t"], ["y"], name="cat", axis=BIG + 1)),
                            "cat", [f"axis {BIG + 1} is outside [-4, 3]"]),
    "flatten-axis-2**40+1": (_conv_then(helper.make_node("Flatten", ["t"], ["y"], name="fl", axis=BIG + 1)),
                             "fl", [f"axis {BIG + 1} is outside [-4, 4]"]),
    "reducemean-computed-axes": (_reducemean_computed_axes(), "rm", [f"axes entry {BIG + 2} is outside [-4, 3]"]),
}
# A finite constant whose products overflow only on the network's values: refused by the float
# model's first run (calibration), naming the conv the Mul was folded into.
MUL_3E38 = _conv_then(helper.make_node("Mul", ["t", "d"], ["y"], name="mul"), [_init("d", [3e38])])


@pytest.mark.parametrize("case", sorted(HOSTILE_VALUES))
def test_import_refuses_constants_that_compute_nonfinite_values_and_axes_that_wrap(case):
    from compiler.frontend import from_model
    from compiler.frontend.graph import ModelError

    model, node, words = HOSTILE_VALUES[case]
    with _no_warnings(), pytest.raises(ModelError) as err:
        from_model(model, "m.onnx")
    assert f"node {node!r}" in str(err.value) and "\n" not in str(err.value)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_float_model_names_the_node_whose_finite_constants_overflow():
    from compiler.frontend import float_ref, from_model
    from compiler.frontend.graph import ModelError

    with _no_warnings():
        graph = from_model(MUL_3E38, "m.onnx")  # x * 3e38 is finite for |x| < 1.13: not refused at import
        with pytest.raises(ModelError, match=r"node 'conv' \(conv\): computes \d+ infinite or NaN"):
            float_ref.forward(graph, np.full((1, 4, 4, 4), 100.0, np.float32))
        # inf or NaN already in the input is the input's, not the node's: it passes through
        assert not np.isfinite(float_ref.forward(graph, np.full((1, 4, 4, 4), np.inf, np.float32))).all()


def _no_warnings():
    """numpy's RuntimeWarnings (divide by zero, overflow in cast) raised as errors: the refusal
    must be the only thing the user sees."""
    import warnings
    from contextlib import contextmanager

    @contextmanager
    def strict():
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            yield

    return strict()


@pytest.mark.slow  # one CLI start per model: about 5 s each under load
@pytest.mark.parametrize("case", [*sorted(HOSTILE_VALUES), "mul-3e38"])
def test_vdla_run_refuses_them_in_one_line_before_the_heavy_work(case, tmp_path, base_seconds):
    """Exit 2, one error line naming the node (the last line; before it only progress lines, no
    numpy warning), within SECONDS of the CLI's start-up (old code: an internal error after
    calibration, or a run with the axis wrapped)."""
    model, node, words = HOSTILE_VALUES[case] if case != "mul-3e38" else (MUL_3E38, "conv", ["infinite or NaN"])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    code, err, seconds = vdla("run", path)
    lines = err.splitlines()
    assert code == 2 and lines[-1].startswith("vdla: error: ") and "Traceback" not in err, err
    assert all(line.startswith(("importing ", "quantizing ")) for line in lines[:-1]), err
    assert all(w in lines[-1] for w in [f"node {node!r}", *words]), err
    assert seconds - base_seconds < SECONDS, f"took {seconds:.1f} s (start-up {base_seconds:.1f} s)"
