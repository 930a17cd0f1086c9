"""AutoTVM board records -> our kernel specs with the same knobs, and their modelled seconds.

A record is a row of ``compiler.paper.board_records("arm_cpu")`` (compiler/data/board_records.csv:
tlc-pack/tophub's PYNQ-Z1 logs, see its header): a ResNet-18 conv shape (``H, W, IC, OC, K,
stride, pad``, batch 1), ``dtype`` (``float32``: arm_cpu_v0.01.log; ``int8``: vta_v0.02.log,
int8 x int8 -> int32), ``template`` and ``knobs``, the config entity as logged::

    [["tile_co", "sp", [CO/VC, VC]], ["tile_oh", "sp", [OH/VH, VH]], ["tile_ow", "sp", [OW/VW, VW]],
     ["reorder_0", "re", [10 loop indices]], ["ann_reduce", "an", [kh, kw]],
     ["ann_spatial", "an", [vh, vw, vc]]]

:func:`cpu_spec_from_record` maps a ``direct`` record to :class:`.fp32.Fp32Conv2dSpec` (float32;
no relu, the logged workload is the conv alone; our spec adds a bias, zeros here: VH*VW*VC adds
per tile) or :class:`.int8_pack.Int8PackConv2dSpec` (int8) with those knobs
(:mod:`.spatial_pack`), and a ``winograd`` record (TVM's F(4x4, 3x3) template, knobs ``tile_p``,
``tile_k``, ``tile_c``, ``ann_reduce``, ``ann_spatial``) to :class:`.winograd.Fp32WinogradConv2dSpec`.
:func:`replay` prices the spec with :class:`.cost.CpuModel`; nothing in it is fitted to the
measured seconds.
"""

from __future__ import annotations

from .errors import KernelError
from .spatial_pack import AXES

KNOBS = {"direct": ("tile_co", "tile_oh", "tile_ow", "reorder_0", "ann_reduce", "ann_spatial"),
         "winograd": ("tile_p", "tile_k", "tile_c", "ann_reduce", "ann_spatial")}
"""The knobs of TVM's arm_cpu conv2d templates (topi/python/topi/arm_cpu/conv2d.py)."""
THREADS = 2
"""TVM's schedule parallelises the conv's output-channel blocks (``s[last].parallel(co)``) and
its thread pool runs one thread per core: the PYNQ-Z1's Cortex-A9 has two."""


class RecordError(KernelError):
    """A board record cannot be mapped to a kernel spec (unknown knob, template, dtype, shape)."""


def _where(record) -> str:
    return f"record {record.get('record', '?')} ({record.get('source', '?')} line {record.get('line', '?')})"


def _split(record, knobs, name, extent):
    """The inner factor of split knob ``name`` of an axis of ``extent``."""
    value = knobs.get(name)
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and v > 0 for v in value)):
        raise RecordError(f"{_where(record)}: {name}={value!r} is not a split of two positive ints")
    if value[0] * value[1] != extent:
        raise RecordError(f"{_where(record)}: {name}={value} does not split an axis of {extent}")
    return value[1]


def cpu_spec_from_record(record):
    """The kernel spec of a board record with the record's shape, dtype and knobs: ``direct``
    -> the spatial-pack spec of its dtype, ``winograd`` -> :class:`.winograd.Fp32WinogradConv2dSpec`;
    RecordError (one line) for another template, an unknown or missing knob, a bad split or dtype."""
    template = record.get("template")
    if template not in KNOBS:
        raise RecordError(f"{_where(record)}: template {template!r} is not one of {sorted(KNOBS)}")
    entries = record.get("knobs")
    if not isinstance(entries, list) or not all(isinstance(e, list) and len(e) == 3 for e in entries):
        raise RecordError(f"{_where(record)}: knobs must be a list of [name, kind, value] entries")
    knobs = {name: value for name, _, value in entries}
    unknown = sorted(set(knobs) - set(KNOBS[template]))
    missing = sorted(set(KNOBS[template]) - set(knobs))
    if unknown or missing:
        raise RecordError(f"{_where(record)}: unknown knobs {unknown}, missing knobs {missing} (the {template} "
                          f"template has {list(KNOBS[template])})")
    try:
        return (_direct if template == "direct" else _winograd)(record, knobs)
    except KernelError as error:
        if isinstance(error, RecordError):
            raise
        raise RecordError(f"{_where(record)}: {error}") from None


def _direct(record, knobs):
    from .fp32 import Fp32Conv2dSpec
    from .int8_pack import Int8PackConv2dSpec
    from .spec import out_size

    h, w, k, s, p = (int(record[key]) for key in ("H", "W", "K", "stride", "pad"))
    oh, ow = out_size(h, k, s, p), out_size(w, k, s, p)
    reorder = knobs["reorder_0"]
    if not (isinstance(reorder, list) and sorted(reorder) == list(range(len(AXES)))):
        raise RecordError(f"{_where(record)}: reorder_0={reorder!r} is not an order of the {len(AXES)} loops {AXES}")
    fields = dict(n=1, c=int(record["IC"]), h=h, w=w, oc=int(record["OC"]), kh=k, kw=k, stride=s, pad=p,
                  vc=_split(record, knobs, "tile_co", int(record["OC"])), vh=_split(record, knobs, "tile_oh", oh),
                  vw=_split(record, knobs, "tile_ow", ow), reorder=tuple(reorder),
                  ann_reduce=tuple(knobs["ann_reduce"]), ann_spatial=tuple(knobs["ann_spatial"]))
    kinds = {"float32": Fp32Conv2dSpec, "int8": Int8PackConv2dSpec}
    if record.get("dtype") not in kinds:
        raise RecordError(f"{_where(record)}: dtype {record.get('dtype')!r} is not one of {sorted(kinds)}")
    return kinds[record["dtype"]](**fields)


def _winograd(record, knobs):
    from .winograd import M_OUT, Fp32WinogradConv2dSpec

    h, w, c, oc = (int(record[key]) for key in ("H", "W", "IC", "OC"))
    if (int(record["K"]), int(record["stride"]), int(record["pad"])) != (3, 1, 1) or record.get("dtype") != "float32":
        raise RecordError(f"{_where(record)}: TVM's winograd template is a float32 3x3 conv, stride 1, pad 1")
    tiles = -(-h // M_OUT) * -(-w // M_OUT)
    return Fp32WinogradConv2dSpec(c=c, h=h, w=w, oc=oc, vp=_split(record, knobs, "tile_p", tiles),
                                  vk=_split(record, knobs, "tile_k", oc), vci=_split(record, knobs, "tile_c", c),
                                  ann_reduce=tuple(knobs["ann_reduce"]), ann_spatial=tuple(knobs["ann_spatial"]))


def replay(record, cpu: str = "cortex-a9", threads: int = THREADS) -> dict:
    """Modelled seconds of a board record's kernel on ``cpu`` with ``threads`` cores (TVM's two
    by default, :data:`THREADS`): ``record``, ``dtype``, ``template``, ``layers``, ``spec`` (its
    ``describe()``), ``modelled_s``, ``measured_s`` (the record's, for comparison only),
    ``cycles``, ``basis`` and ``parts`` (the model's breakdown, :class:`.cost.KernelCost`).
    RecordError as :func:`cpu_spec_from_record` for a record it refuses."""
    from .cost import CpuModel

    spec = cpu_spec_from_record(record)
    cost = CpuModel(cpu, baseline="int8", threads=threads).kernel_cost(spec)
    return {"record": record.get("record"), "dtype": record.get("dtype"), "template": record.get("template"),
            "layers": record.get("layers"), "spec": spec.describe(), "modelled_s": cost.seconds,
            "measured_s": record.get("measured_s"), "cycles": cost.cycles, "basis": cost.basis,
            "parts": dict(cost.parts)}
