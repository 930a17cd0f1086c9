"""CPU baselines as data: which program the modelled CPU time of a CPU op is the time of.

``compiler/data/baselines/<name>.json`` names a baseline, what it is, its source and its
parameters (each with a value and a source). ``int8`` is the code ``vdla run`` executes (every
kernel priced as itself). ``fp32`` is TVM-style FP32 (the VTA paper's A9 baseline): every op that has an FP32
kernel of the same shape in :mod:`..fp32` is priced by it, ops a float network does not have
(``no_work``) cost nothing, and the rest (layout packing, tables, softmax, ...: no FP32
counterpart modelled) keep their int8 kernel, which ``Priced.stand_in`` says. ``tcpu`` is the
system the TVM paper measured on the CPU (its ReQuEST'18 artifact's ``-device=tcpu``): the same
int8 graph, every conv whose shape has an entry in its ``conv_schedules`` table (VTA's 2018
``arm_conv2d.py``) priced by :class:`..int8_pack.Int8PackConv2dSpec` with that entry's tile and
annotations (:func:`_table_conv`), a conv without one by its int8 kernel (a stand-in), every
other op by its int8 kernel.

Only the modelled time changes; the functional path stays int8.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.errors import VdlaError

from .. import fp32
from ..errors import KernelParamError
from .cpus import data_names, read_data


class BaselineError(VdlaError):
    """An unknown baseline name or a malformed baseline data file."""


@dataclass(frozen=True)
class Priced:
    """The kernels one op is priced by: ``(spec, calls)`` pairs (empty: no work), and whether
    the int8 kernel stands in for a missing counterpart."""

    kernels: tuple
    stand_in: bool = False


@dataclass(frozen=True)
class Baseline:
    name: str
    title: str
    source: str
    values: dict
    sources: dict

    def as_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "source": self.source,
                "params": {k: {"value": self.values[k], "source": self.sources[k]} for k in self.values}}

    @property
    def stand_in_note(self) -> str:
        """What a stand-in means in this baseline (for the cost's basis)."""
        if "conv_schedules" in self.values:
            return "our int8 conv: no entry of this shape in the baseline's schedule table"
        return "int8 kernel: no FP32 counterpart modelled"

    def price(self, spec) -> Priced:
        """The kernels ``spec`` (an int8 kernel of the functional path) is priced by."""
        if self.name == "int8":
            return Priced(((spec, 1),))
        if "conv_schedules" in self.values:
            if spec.family != "conv2d":
                return Priced(((spec, 1),))
            table = _table_conv(spec, self.values["conv_schedules"])
            return Priced(((spec, 1),), stand_in=True) if table is None else Priced(((table, 1),))
        if spec.family in self.values.get("no_work", ()):
            return Priced(())
        try:
            mapped = _fp32_of(spec, tuple(self.values["conv_tile"]))
        except KernelParamError:
            mapped = None
        return Priced(((spec, 1),), stand_in=True) if mapped is None else Priced(mapped)


def _fp32_of(spec, tile):
    """(fp32 spec, calls) pairs of the same shape as int8 ``spec``, or None (no counterpart)."""
    f = spec.family
    vh, vw, vc = tile
    if f == "conv2d":
        (sh, sw), pads = spec.stride, spec.pad
        if sh != sw or len(set(pads)) != 1:
            return None
        og = spec.oc // spec.groups
        if spec.groups > 1 and og < vc:
            return None  # depthwise-like: TVM has another schedule for it, not modelled
        conv = fp32.Fp32Conv2dSpec(n=spec.n, c=spec.cg, h=spec.h, w=spec.w, oc=og, kh=spec.kh, kw=spec.kw,
                                   stride=sh, pad=pads[0], relu=spec.relu, vh=vh, vw=vw, vc=vc)
        return ((conv, spec.groups),)
    if f == "dense":
        return ((fp32.Fp32DenseSpec(n=spec.n, k=spec.k, m=spec.m, relu=spec.relu), 1),)
    if f == "maxpool2d":
        if spec.kh != spec.kw or len(set(spec.stride)) != 1 or len(set(spec.pad)) != 1:
            return None
        return ((fp32.Fp32MaxPoolSpec(n=spec.n, c=spec.c, h=spec.h, w=spec.w, k=spec.kh, stride=spec.stride[0],
                                      pad=spec.pad[0]), 1),)
    if f == "global_avgpool":
        return ((fp32.Fp32GlobalAvgPoolSpec(n=spec.n, c=spec.c, h=spec.h, w=spec.w), 1),)
    if f == "add":
        return ((fp32.Fp32EltwiseSpec(size=spec.size, inputs=2, relu=spec.relu), 1),)
    if f == "mul":  # a float product: one vmul.f32 where the add has a vadd.f32, the same traffic
        return ((fp32.Fp32EltwiseSpec(size=spec.size, inputs=2), 1),)
    if f == "relu":
        return ((fp32.Fp32EltwiseSpec(size=spec.size, inputs=1, relu=True), 1),)
    return None


SCHEDULE_KEYS = {"SpatialPack": ("vh", "vw", "vc", "ba", "bc", "unroll"), "Im2ColPack": ("vp", "vq", "ba", "bc", "unroll")}
"""The fields of the 2018 schedule tuples (topi/python/topi/nn/conv2d.py of that time)."""
SHAPE_KEYS = ("H", "W", "IC", "OC", "K", "pad", "stride")


def _table_conv(spec, table):
    """The :class:`..int8_pack.Int8PackConv2dSpec` that prices int8 conv ``spec`` under the
    table's entry for its shape (square kernel, stride and pad, one group, batch as given), or
    None (no entry: TVM had no schedule for it). SpatialPack(vh, vw, vc, ., ., unroll): that
    tile, kh and kw loops, vh a loop, vw unrolled if ``unroll``, vc a vector (VTA's
    ``_schedule_spatial_conv2d``); Im2ColPack(vp, vq, ...) on an output row of vp pixels: the
    tile 1 x vp x vq with vw unrolled (``_schedule_im2col_conv2d`` unrolls vim always); an
    Im2ColPack entry whose vp is not the output width has no such tile: None. The data file's
    ``spatial_pack_knobs`` and ``im2col_as_spatial_pack`` give the sources."""
    from ..int8_pack import Int8PackConv2dSpec
    from ..spatial_pack import REORDERS

    (sh, sw), pads = spec.stride, set(spec.pad)
    if spec.groups != 1 or sh != sw or len(pads) != 1 or spec.kh != spec.kw:
        return None
    shape = (spec.h, spec.w, spec.c, spec.oc, spec.kh, pads.pop(), sh)
    entry = next((e for e in table if tuple(e[k] for k in SHAPE_KEYS) == shape), None)
    if entry is None:
        return None
    fields = dict(n=spec.n, c=spec.c, h=spec.h, w=spec.w, oc=spec.oc, kh=spec.kh, kw=spec.kw, stride=sh,
                  pad=shape[5], reorder=REORDERS[0], ann_reduce=("none", "none"))
    if entry["schedule"] == "SpatialPack":
        return Int8PackConv2dSpec(**fields, vh=entry["vh"], vw=entry["vw"], vc=entry["vc"],
                                  ann_spatial=("none", "unroll" if entry["unroll"] else "none", "vec"))
    conv = Int8PackConv2dSpec(**fields, vh=1, vw=entry["vp"], vc=entry["vq"], ann_spatial=("none", "unroll", "vec"))
    return conv if conv.ow == entry["vp"] else None


def _check_table(where: str, table) -> None:
    """BaselineError unless ``table`` is a list of entries with the shape keys and one
    schedule's fields, ints (``unroll`` a bool)."""
    if not isinstance(table, list) or not table:
        raise BaselineError(f"{where}: conv_schedules must be a non-empty list of entries")
    for i, entry in enumerate(table):
        keys = SCHEDULE_KEYS.get(entry.get("schedule") if isinstance(entry, dict) else None)
        if keys is None:
            raise BaselineError(f"{where}: conv_schedules[{i}] needs a 'schedule' of {sorted(SCHEDULE_KEYS)}")
        wanted = set(SHAPE_KEYS) | set(keys) | {"schedule"}
        if set(entry) != wanted:
            raise BaselineError(f"{where}: conv_schedules[{i}] ({entry['schedule']}) needs exactly the keys "
                                f"{sorted(wanted)}")
        if not all(type(entry[k]) is int and entry[k] >= 0 for k in wanted - {"schedule", "unroll"}) \
                or not isinstance(entry["unroll"], bool):
            raise BaselineError(f"{where}: conv_schedules[{i}]: shape and tile fields are ints >= 0, unroll a bool")


def baseline_names() -> list[str]:
    """Names of the baselines with a data file, sorted."""
    return data_names("baselines")


def parse_baseline(name: str, data) -> Baseline:
    """A :class:`Baseline` from the parsed JSON of ``<name>.json`` (every field checked)."""
    where = f"baseline data {name}.json"
    if not isinstance(data, dict) or data.get("name") != name:
        raise BaselineError(f"{where}: its 'name' must be {name!r}")
    for key in ("title", "source"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise BaselineError(f"{where}: needs a '{key}' string")
    params = data.get("params")
    if not isinstance(params, dict):
        raise BaselineError(f"{where}: no 'params' object")
    values, sources = {}, {}
    for key, entry in params.items():
        if not isinstance(entry, dict) or "value" not in entry or not isinstance(entry.get("source"), str) \
                or not entry["source"].strip():
            raise BaselineError(f"{where}: parameter {key} needs a value and a source")
        values[key], sources[key] = entry["value"], entry["source"]
    if "conv_schedules" in values:
        _check_table(where, values["conv_schedules"])
    elif name != "int8":
        tile = values.get("conv_tile")
        if not (isinstance(tile, list) and len(tile) == 3 and all(isinstance(v, int) and v > 0 for v in tile)):
            raise BaselineError(f"{where}: conv_tile must be three positive ints [VH, VW, VC]")
        if not isinstance(values.get("no_work", []), list):
            raise BaselineError(f"{where}: no_work must be a list of kernel families")
    return Baseline(name, data["title"], data["source"], values, sources)


def load_baseline(name: str) -> Baseline:
    """The baseline called ``name`` (one of :func:`baseline_names`); BaselineError otherwise."""
    return parse_baseline(name, read_data("baselines", name, "CPU baseline", BaselineError))
