"""Kernel specs the ARM (qemu) tests run: ResNet-18 shapes plus seeded generated shapes."""

import dataclasses

import numpy as np

import compiler.cpu_fallback as cf
from compiler.cpu_fallback import resnet18
from compiler.cpu_fallback.spec import out_size


def _resnet_convs():
    rows = {r["name"]: r for r in resnet18.layer_table()}
    names = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer2.0.downsample", "layer4.0.conv2"]
    return [dataclasses.replace(resnet18.conv_spec(rows[n]), shift=10) for n in names]


def _generated(seed=1234, count=4):
    """A few random small shapes per kernel family (seeded, so the library is reproducible)."""
    rng = np.random.default_rng(seed)
    specs = []
    while len(specs) < count:
        kh, kw = (int(v) for v in rng.integers(1, 6, 2))
        stride = int(rng.integers(1, 4))
        h, w = (int(v) for v in rng.integers(1, 14, 2))
        pad = int(rng.integers(0, max(kh, kw)))
        if out_size(h, kh, stride, pad) < 1 or out_size(w, kw, stride, pad) < 1:
            continue
        specs.append(cf.Conv2dSpec(n=int(rng.integers(1, 3)), c=int(rng.integers(1, 6)), h=h, w=w,
                                   oc=int(rng.integers(1, 7)), kh=kh, kw=kw, stride=stride,
                                   pad=pad, shift=int(rng.integers(0, 12)),
                                   relu=bool(rng.integers(0, 2))))
    for _ in range(count):
        k = int(rng.integers(1, 5))
        stride, pad = int(rng.integers(1, 4)), int(rng.integers(0, k))
        h, w = (int(v) for v in rng.integers(k, 16, 2))
        specs.append(cf.MaxPool2dSpec(n=1, c=int(rng.integers(1, 5)), h=h, w=w, kh=k, kw=k,
                                      stride=stride, pad=pad))
        specs.append(cf.GlobalAvgPoolSpec(n=int(rng.integers(1, 3)), c=int(rng.integers(1, 9)),
                                          h=int(rng.integers(1, 12)), w=int(rng.integers(1, 12))))
        size = int(rng.integers(1, 300))
        specs.append(cf.AddSpec(size=size, a_shift=int(rng.integers(0, 17)),
                                b_shift=int(rng.integers(0, 17)), shift=int(rng.integers(0, 32)),
                                relu=bool(rng.integers(0, 2))))
        specs.append(cf.ReluSpec(size=size))
        specs.append(cf.DenseSpec(n=int(rng.integers(1, 4)), k=int(rng.integers(1, 70)),
                                  m=int(rng.integers(1, 20)), shift=int(rng.integers(0, 16)),
                                  relu=bool(rng.integers(0, 2))))
        frac = int(rng.integers(-8, 20))
        specs.append(cf.QuantizeSpec(size=size, frac=frac))
        specs.append(cf.DequantizeSpec(size=size, frac=frac))
        n, c, h, w = (int(v) for v in rng.integers(1, 7, 4))
        batch, block = int(rng.choice([1, 2])), int(rng.choice([4, 16]))
        dtype = str(rng.choice(["int8", "int32"]))
        specs.append(cf.PackSpec(n=n, c=c * 5, h=h, w=w, batch=batch, block=block, dtype=dtype))
        specs.append(cf.UnpackSpec(n=n, c=c * 5, h=h, w=w, batch=batch, block=block, dtype=dtype))
    return specs


def arm_specs():
    """Every kernel family at least once on a ResNet-18 shape and on generated shapes."""
    resnet = _resnet_convs() + [
        cf.MaxPool2dSpec(n=1, c=64, h=112, w=112, kh=3, kw=3, stride=2, pad=1),
        cf.GlobalAvgPoolSpec(n=1, c=512, h=7, w=7),
        cf.AddSpec(size=64 * 56 * 56, a_shift=1, shift=1, relu=True),
        cf.ReluSpec(size=64 * 112 * 112),
        cf.DenseSpec(n=1, k=512, m=1000, out_dtype="int32"),
        cf.DenseSpec(n=1, k=512, m=1000, shift=9, relu=True),
        cf.QuantizeSpec(size=3 * 224 * 224, frac=5),
        cf.DequantizeSpec(size=1000, frac=3),
        cf.PackSpec(n=1, c=3, h=224, w=224, batch=1, block=16),
        cf.UnpackSpec(n=1, c=64, h=56, w=56, batch=1, block=16),
        cf.PackSpec(n=1, c=64, h=56, w=56, batch=1, block=16, dtype="int32"),
    ]
    return resnet + _generated()


def case_id(spec):
    return f"{spec.family}-{spec.symbol[-12:]}"
