"""ResNet-18's CPU work as kernel specs, and the TVM paper's Fig. 21 CPU bars to compare with.

Data (the project's copies of the paper's tables, ``compiler/data``, read via ``compiler.paper``):
``resnet18_layers.csv`` (every conv and the classifier at 224x224, batch 1) and
``tvm_fig21_resnet18.csv`` (seconds per group on the Cortex-A9).

Groups match Fig. 21: ``layer0`` is the stem conv, ``conv`` the other 19 convolutions, and
``other`` everything else our int8 flow runs on the CPU: quantize the float input, max pool
3x3/2, eight residual adds (with the block's ReLU fused), global average pool, the classifier.
"""

from compiler.paper import read_csv

from .conv import Conv2dSpec
from .dense import DenseSpec
from .elementwise import AddSpec, QuantizeSpec
from .pool import GlobalAvgPoolSpec, MaxPool2dSpec

# Requantization parameters do not change the work; any valid value serves the time model.
_SHIFT = 8


def _rows(name):
    return read_csv(name)


def layer_table():
    """ResNet-18 conv/fc rows: dicts with ints for every numeric column."""
    rows = _rows("resnet18_layers.csv")
    return [{k: (v if k == "name" else int(v)) for k, v in row.items()} for row in rows]


def fig21_cpu_only():
    """Fig. 21 Cortex-A9-only bars in seconds, keys layer0, conv, other, total."""
    row = next(r for r in _rows("tvm_fig21_resnet18.csv") if r["system"] == "cpu_only")
    return {"layer0": float(row["layer0_s"]), "conv": float(row["conv_s"]),
            "other": float(row["other_s"]), "total": float(row["total_s"])}


def conv_spec(row):
    """Conv2dSpec of one layer-table row (ReLU and shift do not change its work)."""
    return Conv2dSpec(n=1, c=row["IC"], h=row["H_in"], w=row["W_in"], oc=row["OC"], kh=row["K"],
                      kw=row["K"], stride=row["stride"], pad=row["pad"], shift=_SHIFT, relu=True)


def stem_spec():
    """The stem conv: 224x224x3 -> 64 channels, 7x7, stride 2, pad 3."""
    return conv_spec(next(r for r in layer_table() if r["name"] == "conv1"))


def cpu_workload():
    """{'layer0': [...], 'conv': [...], 'other': [...]} kernel specs of one ResNet-18 inference."""
    convs = [r for r in layer_table() if r["name"] != "fc"]
    fc = next(r for r in layer_table() if r["name"] == "fc")
    other = [QuantizeSpec(size=3 * 224 * 224, frac=6),
             MaxPool2dSpec(n=1, c=64, h=112, w=112, kh=3, kw=3, stride=2, pad=1)]
    for channels, size in ((64, 56), (128, 28), (256, 14), (512, 7)):
        other += [AddSpec(size=channels * size * size, shift=1, relu=True)] * 2
    other += [GlobalAvgPoolSpec(n=1, c=512, h=7, w=7),
              DenseSpec(n=1, k=fc["IC"], m=fc["OC"], out_dtype="int32")]
    return {"layer0": [conv_spec(convs[0])], "conv": [conv_spec(r) for r in convs[1:]],
            "other": other}


def cpu_only_seconds(model) -> dict:
    """Modelled seconds of each Fig. 21 CPU-only group (and their total) with ``model`` (a
    ``cost.CpuModel``), kernel by kernel, without running the network."""
    groups = {group: sum(model.seconds(spec) for spec in specs) for group, specs in cpu_workload().items()}
    return {**groups, "total": sum(groups.values())}
