"""experiments/encoder_block.py: the exporter-shaped encoder block against onnxruntime (float), and
its quantized network through the executor against the int8 numpy reference, bit for bit."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from compiler.frontend import float_ref, from_model
from experiments.encoder_block import BlockShape, encoder_block

SMALL = {"relu": BlockShape(d_model=32, heads=2, ffn=64, seq=8, activation="relu"),
         "gelu": BlockShape(d_model=48, heads=3, ffn=96, seq=12, activation="gelu")}


def onnxruntime_forward(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"input": x})[0]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_float_block_import_matches_onnxruntime(name):
    model = encoder_block(SMALL[name], seed=3)
    onnx.checker.check_model(model, full_check=True)
    graph = from_model(model, name)
    x = np.random.default_rng(0).standard_normal((1, SMALL[name].seq, SMALL[name].d_model)).astype(np.float32)
    want = onnxruntime_forward(model, x)
    assert want.shape == x.shape
    np.testing.assert_allclose(float_ref.forward(graph, x), want, rtol=0, atol=1e-5 * float(np.abs(want).max()))


def test_the_block_has_torchs_post_norm_structure():
    """The exporter's sequence: two LayerNorms, the second after the FFN's residual Add of the first
    LayerNorm's output; two products of computed tensors around a Softmax; GELU as Erf."""
    model = encoder_block(SMALL["gelu"])
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("LayerNormalization") == 2 and ops.count("Softmax") == 1 and ops.count("Erf") == 1
    assert ops.count("MatMul") == 5 and ops.count("Gemm") == 1  # in-proj, QK^T, PV, FFN x2; out-proj
    nodes = {n.output[0]: n for n in model.graph.node}
    norm1, norm2 = [n for n in model.graph.node if n.op_type == "LayerNormalization"]
    residual = nodes[norm2.input[0]]
    assert residual.op_type == "Add" and norm1.output[0] in residual.input
    assert "Relu" in [n.op_type for n in encoder_block(SMALL["relu"]).graph.node]


def test_macs_count_every_matrix_product():
    s = BlockShape()  # BERT-base: 128 x 768 x (2304 + 768 + 2 x 3072) + 2 x 128^2 x 768
    assert s.macs == 128 * 768 * (3 * 768 + 768 + 2 * 3072) + 2 * 128 * 128 * 768


@pytest.mark.parametrize("kwargs, named", [({"d_model": 64, "heads": 5}, "heads 5"), ({"seq": 0}, "seq"),
                                           ({"activation": "tanh"}, "activation 'tanh'"), ({"ffn": 2.5}, "ffn")])
def test_bad_shapes_are_refused_by_name(kwargs, named):
    with pytest.raises(ValueError, match=named):
        BlockShape(**kwargs)


@pytest.mark.slow
def test_quantized_block_is_bit_exact_through_the_executor_with_every_product_on_the_accelerator(tmp_path):
    from vdla.network import run_network

    shape = SMALL["gelu"]
    path = tmp_path / "block.onnx"
    onnx.save(encoder_block(shape), str(path))
    report = run_network(str(path), config="osdi18", placement="all")
    assert report.bit_exact
    products = [r for r in report.records if r.op in ("dense", "matmul")]
    assert len(products) == 6 and all(r.placement == "vdla" for r in products)
    assert report.totals["offloaded_useful_macs"] == report.totals["useful_macs"] == shape.macs
