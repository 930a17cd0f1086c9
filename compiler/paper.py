"""The published numbers the project is measured against (copied from the TVM and VTA papers
into ``compiler/data``; each CSV's header comments give the source)."""

from __future__ import annotations

import csv
from importlib import resources


def read_csv(name: str) -> list[dict]:
    """Rows of ``compiler/data/NAME`` as dicts of strings (comment lines skipped)."""
    text = resources.files("compiler").joinpath("data", name).read_text()
    return list(csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#")))


def fig21() -> dict[str, dict[str, float]]:
    """TVM Fig. 21 bars: {"cpu_only"|"cpu_plus_vdla": {"other", "layer0", "conv", "total"}} in seconds."""
    return {row["system"]: {k[:-2]: float(v) for k, v in row.items() if k.endswith("_s")}
            for row in read_csv("tvm_fig21_resnet18.csv")}


def fig10() -> list[dict]:
    """TVM Fig. 10 roofline points: label, layer shape, ops_per_byte, GOPS without/with latency hiding."""
    return [{**row, "ops_per_byte": float(row["ops_per_byte"]),
             "gops_no_latency_hiding": float(row["gops_no_latency_hiding"]),
             "gops_latency_hiding": float(row["gops_latency_hiding"])} for row in read_csv("tvm_fig10_roofline.csv")]


FIG10_SHAPE = ("H", "W", "IC", "OC", "K", "stride", "pad")
FIG10_ROOF = {"gops": 51.2, "gbps": 0.8}  # the roof of the paper's Fig. 10 (VTA's 100 MHz PYNQ build)


PAPER_RESOLUTION = 224  # the input size of every ResNet measurement here (Fig. 10, Fig. 21, VTA Fig. 8)


def fig10_shape(row: dict, resolution: int = PAPER_RESOLUTION) -> dict[str, int]:
    """A Fig. 10 row's layer shape (the :data:`FIG10_SHAPE` keys) for inputs of ``resolution``
    instead of 224: the feature maps scale with the input (rounded up, at least 1), channels,
    kernels, strides and pads do not. The paper measured 224; other sizes give the same layers
    smaller, for fast runs (no comparison with the paper)."""
    shape = {key: int(row[key]) for key in FIG10_SHAPE}
    for key in ("H", "W"):
        shape[key] = max(1, -(-shape[key] * resolution // PAPER_RESOLUTION))
    return shape


def fig10_label(h: int, w: int, ic: int, oc: int, k: int, stride: int, pad: int) -> str | None:
    """The Fig. 10 label (C1..C11) of a conv with this input size and shape, or None."""
    for row in fig10():
        if tuple(int(row[key]) for key in FIG10_SHAPE) == (h, w, ic, oc, k, stride, pad):
            return row["label"]
    return None


def fig10_label_of(layer) -> str | None:
    """The Fig. 10 label of an accelerator conv layer. A conv whose input the network pads
    explicitly (a non-zero input zero point: compiler/network/vdla_ops.py) runs with pad 0 on the
    padded input, (h + 2p) x (w + 2p): the same convolution (same output, same MACs) as the
    paper's h x w layer with pad p, so such a layer is matched with p = (k - 1) // 2 as well."""
    label = fig10_label(layer.h, layer.w, layer.ic, layer.oc, layer.k, layer.stride, layer.pad)
    if label is None and layer.pad == 0 and layer.k > 1:
        p = (layer.k - 1) // 2
        label = fig10_label(layer.h - 2 * p, layer.w - 2 * p, layer.ic, layer.oc, layer.k, layer.stride, p)
    return label


def is_fig21_setting(model: str, resolution: int) -> bool:
    """The paper's Fig. 21 and Fig. 10 measured ResNet-18 at 224x224: only there do its bars
    and points stand beside ours."""
    return model == "resnet18" and resolution == PAPER_RESOLUTION


def vta_fig8() -> dict[str, dict[str, float | None]]:
    """VTA paper Fig. 8 latencies: {model: {platform column ("cortex_a9_ms", "vta_pynq_z1_ms",
    ...): milliseconds, or None where the paper reports none}}."""
    return {row.pop("model"): {k: None if v.strip() == "-" else float(v) for k, v in row.items()}
            for row in read_csv("vta_paper_latency.csv")}


BOARD_SHAPE = ("H", "W", "IC", "OC", "K", "stride", "pad")


def board_records(target: str | None = None) -> list[dict]:
    """The ResNet-18 convolutions measured on a PYNQ-Z1 (``board_records.csv``: tlc-pack/tophub's
    AutoTVM logs, see its header): each a dict with the :data:`BOARD_SHAPE` ints, ``knobs`` (the
    logged config entity, parsed), ``measured_s`` (float) and the record's id, source log, line,
    target (``vta`` or ``arm_cpu``), dtype, template and ResNet-18 layer names. ``target`` keeps
    one target's records."""
    import json

    rows = []
    for row in read_csv("board_records.csv"):
        if target is not None and row["target"] != target:
            continue
        rows.append({**row, **{k: int(row[k]) for k in BOARD_SHAPE}, "line": int(row["line"]),
                     "layers": row["layers"].split(), "knobs": json.loads(row["knobs"]),
                     "measured_s": float(row["measured_s"])})
    return rows
