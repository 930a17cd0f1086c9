"""The numpy reference output of a kernel spec on given inputs: each kernel family's definition
in ``compiler.quantize.reference`` (the project's one reference), called with the spec's
parameters."""

import numpy as np

from compiler.quantize import reference as ref


def _shift(spec, inputs, index):
    return inputs[index] if spec.per_channel else spec.shift


def reference_of(spec, inputs):
    f = spec.family
    if f == "conv2d":
        return ref.conv2d(inputs[0], inputs[1], inputs[2], stride=spec.stride, pad=spec.pad, groups=spec.groups,
                          pad_value=spec.pad_value, shift=_shift(spec, inputs, 3), lo=spec.lo, hi=spec.hi,
                          wide=spec.wide)
    if f == "dense":
        return ref.dense(inputs[0], inputs[1], inputs[2], shift=_shift(spec, inputs, 3), lo=spec.lo, hi=spec.hi,
                         wide=spec.out_dtype == "int32")
    if f == "add":
        return ref.add(*inputs, spec.a_shift, spec.b_shift, spec.shift, offset=spec.offset, lo=spec.lo, hi=spec.hi,
                       a_mul=spec.a_mul, b_mul=spec.b_mul)
    if f == "global_avgpool":
        return ref.global_avg_pool(inputs[0], spec.up, spec.add, spec.lo, spec.hi, spec.out_dtype == "int32")
    if f == "maxpool2d":
        return ref.max_pool2d(inputs[0], spec.kh, spec.kw, spec.stride, spec.pad)
    if f == "avgpool2d":
        return ref.avg_pool2d(inputs[0], (spec.kh, spec.kw), spec.stride, spec.pad, (0, 0), inputs[1].astype(np.int64),
                              inputs[2], spec.up, spec.pad_value, spec.lo, spec.hi)
    if f == "mul":
        a, b = (x.reshape(ext) for x, ext in zip(inputs, (spec.a_ext, spec.b_ext)))
        out = ref.mul(a, b, spec.a_zp, spec.b_zp, spec.mul, spec.shift, spec.zp, spec.lo, spec.hi)
        return np.broadcast_to(out, (spec.n, spec.c, spec.inner)).reshape(-1)
    if f == "lut":
        return ref.lut(*inputs)
    if f == "muladd":
        return ref.muladd(inputs[0], inputs[1], inputs[2], spec.shift, spec.lo, spec.hi)
    if f == "concat":
        parts = [x.reshape(spec.outer, p, spec.inner) for x, p in zip(inputs, spec.parts)]
        return ref.concat(parts, 1, spec.shifts, spec.zps, spec.zp).reshape(spec.outer, -1)
    if f == "gather":
        index, fill = inputs[1], inputs[2]
        return np.stack([ref.gather(row, index, fill, index.shape) for row in inputs[0]])
    if f == "resize":
        planes = inputs[0].reshape(spec.planes, 1, spec.size_in, 1)
        return ref.resize(planes, inputs[1], inputs[2], spec.frac, (spec.planes, spec.size_out))
    if f == "softmax":
        mask = None
        if spec.mask_rows:  # the mask's rows repeat over the outer rows
            mask = np.tile(inputs[2].reshape(spec.mask_rows, spec.axis, spec.inner),
                           (spec.outer // spec.mask_rows, 1, 1)).astype(bool)
        return ref.softmax(inputs[0].reshape(spec.outer, spec.axis, spec.inner), 1, inputs[1], spec.zp, mask)
    if f == "layernorm":
        return ref.layernorm(inputs[0], inputs[1], inputs[2], spec.eps, spec.shift)
    if f == "matmul":
        a, b = inputs[0].reshape(spec.g, spec.n, spec.k), inputs[1].reshape(spec.g, spec.k, spec.m)
        return ref.matmul(a, b, spec.add, spec.shift, spec.lo, spec.hi, spec.a_zp)
    if f == "relu":
        return ref.relu(inputs[0])
    if f == "quantize":
        return ref.quantize(inputs[0], spec.frac)
    if f == "dequantize":
        return ref.dequantize(inputs[0], spec.frac)
    raise ValueError(f"no reference for {f}")
