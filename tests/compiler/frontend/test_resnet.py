"""Built-in ResNet builders: torchvision shapes (the paper's layer table) and determinism."""

import csv
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler.frontend import from_model, load_onnx
from compiler.frontend.graph import ModelError
from compiler.frontend.resnet import build_resnet, resnet_graph

TABLE = Path(__file__).parents[3] / "compiler" / "data" / "resnet18_layers.csv"


def layer_table():
    with open(TABLE) as fh:
        rows = [r for r in csv.DictReader(line for line in fh if not line.startswith("#"))]
    return {r["name"]: r for r in rows}


def test_resnet18_at_224_matches_the_layer_table(tmp_path):
    path = tmp_path / "r18.onnx"
    onnx.save(build_resnet(18, 224, calib_batch=1), str(path))
    graph = load_onnx(path)
    table = layer_table()
    convs = [n for n in graph.nodes if n.op in ("conv", "dense")]
    assert len(convs) == len(table) == 21
    for node in convs:
        name = node.name.replace("downsample.0", "downsample")
        row = table[name]
        out = graph.shapes[node.output]
        if node.op == "conv":
            o, i, kh, _ = node.attrs["weight"].shape
            assert (i, o, kh, node.attrs["stride"][0], node.attrs["pad"][0], out[2], out[3]) == \
                tuple(int(row[k]) for k in ("IC", "OC", "K", "stride", "pad", "H_out", "W_out")), name
            assert int(np.prod(out)) * i * kh * kh == int(row["macs"])
        else:
            assert node.attrs["weight"].size == int(row["macs"])


def test_resnet34_has_the_torchvision_block_counts():
    model = build_resnet(34, 32, calib_batch=1)
    convs = [n.name for n in model.graph.node if n.op_type == "Conv"]
    assert len(convs) == 36 and sum("downsample" in c for c in convs) == 3


def test_weights_are_deterministic():
    a, b = build_resnet(18, 32, seed=5), build_resnet(18, 32, seed=5)
    assert a.SerializeToString() == b.SerializeToString()
    assert build_resnet(18, 32, seed=6).SerializeToString() != a.SerializeToString()


def same(a, b, where="graph"):
    """``a`` and ``b`` equal value for value: types, dict key order, array dtypes, shapes and bits."""
    assert type(a) is type(b), where
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.flags.c_contiguous == b.flags.c_contiguous, where
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            same(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif hasattr(a, "__dict__"):
        same(vars(a), vars(b), where)
    else:
        assert a == b, where


@pytest.mark.parametrize("depth,resolution,seed", [(18, 32, 0), (18, 64, 5), (34, 32, 0)])
def test_the_graph_built_without_onnx_is_the_imported_one(depth, resolution, seed):
    from vdla.network import content_digest

    direct = resnet_graph(depth, resolution, seed, calib_batch=2)
    imported = from_model(build_resnet(depth, resolution, seed, calib_batch=2), f"resnet{depth}")
    same(direct, imported)
    assert content_digest(direct) == content_digest(imported)


@pytest.mark.parametrize("depth,resolution", [(50, 224), (18, 100), (18, 16)])
def test_bad_builder_arguments(depth, resolution):
    with pytest.raises(ModelError):
        build_resnet(depth, resolution)
    with pytest.raises(ModelError):
        resnet_graph(depth, resolution)
