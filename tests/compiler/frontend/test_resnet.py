"""Built-in ResNet builders: torchvision shapes (the paper's layer table) and determinism."""

import csv
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler.frontend import load_onnx
from compiler.frontend.graph import ModelError
from compiler.frontend.resnet import build_resnet

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


@pytest.mark.parametrize("depth,resolution", [(50, 224), (18, 100), (18, 16)])
def test_bad_builder_arguments(depth, resolution):
    with pytest.raises(ModelError):
        build_resnet(depth, resolution)
