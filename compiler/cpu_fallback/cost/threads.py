"""One core's share of a kernel split across two cores, as TVM's thread pool splits it.

TVM parallelises a kernel's outermost loop (``s[...].parallel(axis)``: for the spatial-pack conv
the output-channel blocks, for element-wise ops the fused outer axis) and its thread pool gives
each core a contiguous half. :func:`share` is the larger half as a kernel spec of its own (the
core that finishes last), so the cost model analyses it like any kernel: its own code, its own
L1. Kernels without a rule here (layout packing, tables, gathers, ...) or too small to split
run on one core (``share`` returns None).
"""

from __future__ import annotations

import dataclasses

from ..errors import KernelParamError

ELEMENT_GRAIN = 16  # element-wise halves are whole vectors of int8 lanes


def _half(count: int, grain: int = 1) -> int | None:
    """Size of the larger half of ``count`` items split in whole ``grain``-sized chunks."""
    chunks = -(-count // grain)
    if chunks < 2:
        return None
    return min(count, -(-chunks // 2) * grain)


def _replace(spec, **fields):
    try:
        return dataclasses.replace(spec, **fields)
    except KernelParamError:
        return None


SPLIT_ARGS = {"fp32_conv2d": ("wgt", "bias", "out"), "int8_pack_conv2d": ("wgt", "out")}
"""Per family: the buffers :func:`share` splits between the cores (each core's channel blocks of
the weights and outputs); the others (the input and its packed ``data_vec``) both cores read whole,
tile by tile in the same order."""


def split_args(spec):
    """The names of the buffers ``spec``'s two shares split between them, or None when the
    family has no such rule (then the model takes the whole kernel's single stream)."""
    return SPLIT_ARGS.get(spec.family)


def share(spec, cores: int = 2):
    """The larger per-core part of ``spec`` split over ``cores`` (2) cores, or None (one core)."""
    if cores != 2:
        raise ValueError("only two cores are modelled")
    f = spec.family
    if f == "conv2d":
        if spec.groups > 1:
            groups = _half(spec.groups)
            return None if groups is None else _replace(spec, groups=groups, c=spec.cg * groups,
                                                        oc=spec.oc // spec.groups * groups)
        from ..conv import CHANNELS
        oc = _half(spec.oc, CHANNELS if spec.blocked else 1)
        return None if oc is None else _replace(spec, oc=oc)
    if f in ("fp32_conv2d", "int8_pack_conv2d"):
        oc = _half(spec.oc, spec.vc)
        return None if oc is None else _replace(spec, oc=oc)
    if f == "fp32_winograd_conv2d":  # the output-channel blocks; each share transforms the whole input
        oc = _half(spec.oc, spec.vk)
        return None if oc is None else _replace(spec, oc=oc)
    if f in ("maxpool2d", "avgpool2d", "global_avgpool", "fp32_maxpool2d", "fp32_global_avgpool"):
        c = _half(spec.c)
        return None if c is None else _replace(spec, c=c)
    if f in ("add", "relu", "quantize", "dequantize", "lut", "fp32_eltwise"):
        size = _half(spec.size, ELEMENT_GRAIN)
        return None if size is None else _replace(spec, size=size)
    if f == "mul":  # the rows of a gate (channels), else a flat product's elements
        axis, half = (1, _half(spec.c)) if spec.c > 1 else (2, _half(spec.inner, ELEMENT_GRAIN))
        if half is None:
            return None
        exts = [tuple(half if i == axis and e > 1 else e for i, e in enumerate(ext)) for ext in (spec.a_ext, spec.b_ext)]
        return _replace(spec, **{("c", "c", "inner")[axis]: half}, a_ext=exts[0], b_ext=exts[1])
    if f in ("dense", "fp32_dense"):
        m = _half(spec.m)
        return None if m is None else _replace(spec, m=m)
    return None
