"""The model side's op tables: ``compiler.frontend.elementwise.ELEMENTWISE`` and the per-level
tables derived from it or keyed like it are complete and consistent; every element-wise ONNX op
runs through the importer, the float model (against onnxruntime), the quantizer, the int8
reference and the CPU kernels; and a new op is one entry (docs/extending.md's worked example,
inserted into a scratch copy of ``compiler/`` and run there)."""

from __future__ import annotations

import ast
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from compiler.cpu_fallback import host_jit
from compiler.frontend import ModelError, elementwise, float_ref, from_model, graph, onnx_import
from compiler.network import cpu_ops
from compiler.network.partition import REASONS
from compiler.quantize import quantize_graph, reference, rules
from compiler.quantize.qgraph import QGraph
from tests.compiler.frontend.exporter_graphs import Builder

ROOT = Path(__file__).resolve().parents[3]
SHAPE = (1, 4, 5, 6)
ACCELERATED = {"conv", "dense", "add", "matmul"}  # placed by their own rules in partition.place


def test_every_graph_op_has_a_float_meaning_and_a_quantization_rule():
    assert len(set(graph.OPS)) == len(graph.OPS)
    assert set(graph.OPS) == set(float_ref.EVAL) == set(rules.RULES)
    assert set(graph.UNARY) == set(elementwise.NAMES) <= set(rules.REQUANTIZING)


def test_every_quantized_op_has_an_int8_reference_a_cpu_kernel_and_a_placement():
    ops = set(reference.EVAL)
    assert ops == set(cpu_ops.PLANS) | set(cpu_ops.RESHAPES)
    assert set(cpu_ops.ARITY) <= ops
    assert set(REASONS) == ops - ACCELERATED
    # what the quantizer makes: the input's quantize, a graph op of the same name, or a table
    assert {"quantize", "lut", "muladd"} | (set(graph.OPS) - set(graph.UNARY)) <= ops


def _emitted_ops() -> set[str]:
    """The op names onnx_import.py passes to ``emit`` or ``Node`` as string constants."""
    tree = ast.parse((ROOT / "compiler/frontend/onnx_import.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and len(n.args) > 1 and
             getattr(n.func, "attr", getattr(n.func, "id", None)) in ("emit", "Node")]
    return {c.args[1].value for c in calls if isinstance(c.args[1], ast.Constant)}


def test_every_op_the_importer_accepts_maps_to_a_graph_op():
    assert _emitted_ops() and _emitted_ops() <= set(graph.OPS)
    importer = onnx_import._Importer
    generated = {name[3:] for name in dir(importer)
                 if getattr(importer, name) is importer.op_elementwise and name != "op_elementwise"}
    assert generated == set(elementwise.BY_ONNX)
    assert {op.name for op in elementwise.BY_ONNX.values()} <= set(graph.OPS)


def test_docs_onnx_lists_every_elementwise_onnx_op():
    table = [line for line in (ROOT / "docs/onnx.md").read_text().splitlines() if line.startswith("| ")]
    for onnx_op in elementwise.BY_ONNX:
        assert any(re.search(rf"\b{onnx_op}\b", line.split("|")[1]) for line in table), onnx_op


def cpu_forward(q: QGraph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every value of ``q``, each op run by its CPU kernel (``cpu_ops.cpu_kernel``, host JIT)."""
    values = {q.input: x}
    for node in q.nodes:
        args = [values[i] for i in node.inputs]
        kernel = cpu_ops.cpu_kernel(node, args)
        if kernel is None:
            values[node.output] = args[0].reshape(q.shapes[node.output])
            continue
        spec, inputs, shape = kernel
        values[node.output] = host_jit().kernel(spec)(*inputs).reshape(shape)
    return values


def elementwise_model(onnx_op: str, bounds=(), *, on_input: bool = False, **attrs):
    """input -> Conv (4 -> 8 channels, 3x3) -> ``onnx_op`` -> output, as an exporter writes it, or
    ``onnx_op`` of the graph input itself when ``on_input``. ``bounds`` are the op's constant
    inputs after the data (Clip's min and max): each a float32 scalar initializer, None an omitted
    input (the empty name)."""
    b = Builder(seed=len(onnx_op))
    x = "input" if on_input else b.conv("input", SHAPE[1], 8, 3)
    consts = ["" if v is None else b.init(f"bound{k}", np.float32(v)) for k, v in enumerate(bounds)]
    out = b.op(onnx_op, [x] + consts, **attrs)
    opset = max(18, FIRST_OPSET.get(onnx_op, 0))
    return b.model(SHAPE, out, [1, SHAPE[1] if on_input else 8] + list(SHAPE[2:]), opset=opset)


FIRST_OPSET = {"Gelu": 20}   # ONNX ops newer than the exporters' usual opset 18


def check_every_level(onnx_op: str, bounds=(), *, on_input: bool = False, op: str | None = None, **attrs) -> None:
    """``onnx_op`` after a conv (or on the graph input): imported as its graph op (``op``, by
    default its table's), the float model within 1e-4 (of the output's peak) of onnxruntime,
    quantized, the CPU kernels bit for bit the int8 reference, the int8 output within a tenth
    (RMS) of the float one. Returns that relative RMS error."""
    model = elementwise_model(onnx_op, bounds, on_input=on_input, **attrs)
    g = from_model(model, onnx_op)
    assert [n.op for n in g.nodes] == ([] if on_input else ["conv"]) + [op or elementwise.BY_ONNX[onnx_op].name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"input": x})[0]
    got = float_ref.forward(g, x)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    q = quantize_graph(g, rng.standard_normal((4,) + SHAPE[1:]).astype(np.float32))
    int8 = reference.run(q, x)
    on_cpu = cpu_forward(q, x)
    for name in int8:
        np.testing.assert_array_equal(on_cpu[name], int8[name], err_msg=name)
    error = q.dequantize_output(int8[q.output]) - got
    relative = float(np.sqrt((error ** 2).mean() / (got ** 2).mean()))
    assert relative < 0.1, relative
    return relative


@pytest.mark.parametrize("on_input", [False, True], ids=["after_conv", "on_input"])
@pytest.mark.parametrize("onnx_op", sorted(elementwise.BY_ONNX))
def test_each_elementwise_onnx_op_through_every_level(onnx_op, on_input):
    check_every_level(onnx_op, on_input=on_input)


# Attributes other than ONNX's defaults, as exporters write them (torch's hardsigmoid is 1/6, 0.5;
# LeakyReLU(0.1) in YOLO-style detectors, 0.2 in GAN discriminators).
ATTRIBUTES = [("LeakyRelu", {"alpha": 0.1}), ("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.5}),
              ("Selu", {"alpha": 1.5, "gamma": 1.2}), ("HardSigmoid", {"alpha": 1.0 / 6.0, "beta": 0.5}),
              ("Gelu", {"approximate": "tanh"})]


@pytest.mark.parametrize("onnx_op,attrs", ATTRIBUTES, ids=[f"{op}-{list(a.values())}" for op, a in ATTRIBUTES])
def test_elementwise_attributes_through_every_level(onnx_op, attrs):
    check_every_level(onnx_op, **attrs)


# Clip as exporters write it (opset 11+: the bounds are inputs, an omitted one the empty name):
# ReLU6 and hardtanh after a conv are fused into it; on the graph input a clip is a table.
CLIPS = [((0.0, 6.0), "clip"), ((0.0,), "relu"), ((0.0, None), "relu"), ((None, 6.0), "clip"),
         ((-1.0, 1.0), "clip"), ((), "clip")]


@pytest.mark.parametrize("on_input", [False, True], ids=["after_conv", "on_input"])
@pytest.mark.parametrize("bounds,op", CLIPS, ids=[str(list(b)) for b, _ in CLIPS])
def test_clip_variants_through_every_level(bounds, op, on_input):
    check_every_level("Clip", bounds, on_input=on_input, op=op)


def test_clip_bounds_must_be_scalars():
    b = Builder()
    model = b.model(SHAPE, b.op("Clip", ["input", b.init("lo", np.zeros(2, np.float32))]), list(SHAPE))
    with pytest.raises(ModelError, match=r"node 'node_Clip_1' \(Clip\): min 'lo' must be a scalar, not of shape \(2,\)"):
        from_model(model, "m")


def test_tables_use_the_c_library_one_value_at_a_time(monkeypatch):
    """Every op's table is the same on every CPU: :data:`elementwise.SCALAR` is the C library's
    functions element by element, and no op's ``fn`` calls numpy's vectorised transcendental
    functions behind the namespace's back (they raise here while the tables are made)."""
    x = np.linspace(-20.0, 20.0, 257)
    for name, f, domain in (("exp", math.exp, x), ("tanh", math.tanh, x), ("log1p", math.log1p, np.abs(x)),
                            ("erf", math.erf, x)):
        want = np.array([f(v) for v in domain.tolist()])
        assert np.array_equal(getattr(elementwise.SCALAR, name)(domain), want), name
        assert not isinstance(getattr(elementwise.SCALAR, name), np.ufunc), name  # (equal on this CPU only)
        if name != "erf":   # numpy has no erf: the float model takes the C library's too
            assert getattr(elementwise.VECTOR, name) is getattr(np, name)
    assert np.array_equal(elementwise.VECTOR.erf(x), elementwise.SCALAR.erf(x))
    assert elementwise.SCALAR.exp(np.array([1000.0]))[0] == np.inf  # overflow as numpy's, no exception
    attrs = {"alpha": 0.5, "beta": 0.5, "gamma": 1.5, "lo": -1.0, "hi": 1.0, "scale": 2.0, "offset": 1.0,
             "approximate": "none"}

    def vectorised(*args, **kwargs):
        raise AssertionError("a table called numpy's vectorised transcendental function")
    for name in ("exp", "expm1", "exp2", "tanh", "log", "log1p", "logaddexp", "sinh", "cosh", "power"):
        monkeypatch.setattr(np, name, vectorised)
    for op in elementwise.ELEMENTWISE:  # (VECTOR holds numpy's own functions, not the patched names)
        np.testing.assert_allclose(op.tabulate(x, attrs), op.evaluate(x, attrs), rtol=1e-12, atol=1e-15,
                                   err_msg=op.name)


def worked_example() -> tuple[str, str]:
    """(the entry, the ONNX op) of docs/extending.md's worked example: its code block holding
    ``Elementwise(`` and the ONNX op the entry names."""
    text = (ROOT / "docs/extending.md").read_text()
    block = next(b for b in re.findall(r"^ *```\w*\n(.*?)^ *```", text, re.S | re.M) if "Elementwise(" in b)
    entry = textwrap.dedent(block)
    return entry, re.search(r'Elementwise\("\w+", \("(\w+)",', entry).group(1)


def test_a_new_elementwise_op_is_one_entry(tmp_path):
    """The worked example's entry, pasted into ELEMENTWISE of a copy of compiler/ and nothing
    else, makes its ONNX op (refused by the shipped tables) pass :func:`check_every_level`."""
    entry, onnx_op = worked_example()
    with pytest.raises(ModelError, match=f"unsupported op {onnx_op}"):
        from_model(elementwise_model(onnx_op), onnx_op)
    shutil.copytree(ROOT / "compiler", tmp_path / "compiler", ignore=shutil.ignore_patterns("__pycache__"))
    table = tmp_path / "compiler/frontend/elementwise.py"
    source = table.read_text()
    end = source.index("\n)\n\nBY_NAME")  # the end of the ELEMENTWISE tuple
    table.write_text(source[:end] + "\n" + textwrap.indent(entry.rstrip("\n"), "    ") + source[end:])
    script = ("import compiler, sys\n"
              f"assert compiler.__file__.startswith({str(tmp_path)!r}), compiler.__file__\n"
              "from tests.compiler.frontend.test_elementwise import check_every_level\n"
              f"check_every_level({onnx_op!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
