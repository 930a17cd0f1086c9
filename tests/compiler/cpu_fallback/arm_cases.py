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


def _network_kernels(seed=99):
    """The kernels the general network executor adds: grouped/depthwise convs with zero-point
    padding, per-channel shifts and int32 outputs, tables, multiply-adds, windowed average pools,
    concatenation, gathers, softmax, LayerNorm (MobileNet-, SqueezeNet- and VGG-like shapes, and small ones)."""
    rng = np.random.default_rng(seed)
    return [
        cf.Conv2dSpec(n=1, c=32, h=14, w=14, oc=32, kh=3, kw=3, pad=1, groups=32, pad_value=-128, shift=0,
                      per_channel=True, lo=-128, hi=-32),
        cf.Conv2dSpec(n=1, c=8, h=9, w=7, oc=12, kh=3, kw=2, stride=(2, 1), pad=(0, 1, 1, 0), groups=4,
                      pad_value=-5, shift=7),
        cf.Conv2dSpec(n=1, c=6, h=5, w=5, oc=10, kh=1, kw=1, shift=2, wide=True, relu=True),
        # the register-blocked code with zero-point padding, per-channel shifts and a clip
        cf.Conv2dSpec(n=1, c=5, h=11, w=13, oc=7, kh=3, kw=3, stride=2, pad=1, pad_value=-128,
                      per_channel=True, lo=-128, hi=90),
        cf.DenseSpec(n=1, k=77, m=13, per_channel=True, out_dtype="int32"),
        cf.DenseSpec(n=2, k=33, m=9, shift=5, lo=-20, hi=90),
        cf.AddSpec(size=999, a_shift=1, shift=1, offset=129, lo=-128, hi=100),
        # an add whose steps are not powers of two apart (quantize.rules._add_mul)
        cf.AddSpec(size=777, a_mul=23170, b_mul=16384 + 77, shift=15, offset=-(1 << 21) + (1 << 14), lo=-128, hi=127),
        cf.GlobalAvgPoolSpec(n=1, c=7, h=13, w=13, up=8, add=84, out_dtype="int32"),
        cf.GlobalAvgPoolSpec(n=1, c=9, h=5, w=7, up=3, add=-4000, lo=-128, hi=127),
        cf.MaxPool2dSpec(n=1, c=3, h=13, w=11, kh=3, kw=3, stride=2, pad=(0, 0, 1, 1)),
        cf.AvgPool2dSpec(n=1, c=5, h=9, w=8, kh=3, kw=2, stride=(2, 1), pad=(1, 0, 2, 1), pad_value=-128, up=2),
        cf.LutSpec(size=int(rng.integers(100, 3000))),
        cf.MulAddSpec(n=2, size=int(rng.integers(10, 500)), shift=11, lo=-100, hi=110),
        cf.ConcatSpec(outer=2, inner=15, parts=(3, 1, 4), shifts=(0, 2, 1), zps=(-128, 0, 5), zp=-128),
        cf.GatherSpec(n=2, size_in=60, size_out=45),
        # bilinear resizes: a 2x upsampling of three planes, and one output pixel of weight 2**frac
        cf.ResizeSpec(planes=3, size_in=7 * 7, size_out=14 * 14, frac=14),
        cf.ResizeSpec(planes=1, size_in=5, size_out=1, frac=1),
        cf.SoftmaxSpec(outer=3, axis=17, inner=2),
        cf.SoftmaxSpec(outer=2, axis=64, zp=-128),  # probabilities on all 256 codes (rules._softmax)
        # a masked softmax (an attention mask): 3 heads of a 6 x 6 mask's rows, and one along a middle axis
        cf.SoftmaxSpec(outer=18, axis=6, zp=-128, mask_rows=6),
        cf.SoftmaxSpec(outer=4, axis=5, inner=3, mask_rows=2),
        # attention's products (quantize.rules._matmul): four heads of Q.K^T, and one of odd sizes
        cf.MatMulSpec(g=4, n=16, k=8, m=16, add=(1 << 6) - (3 << 7), shift=7),
        cf.MatMulSpec(g=1, n=5, k=13, m=3, add=-9, shift=0, lo=-100, hi=90),
        cf.MatMulSpec(g=2, n=8, k=16, m=8, add=1 << 7, shift=8, a_zp=-128),  # P.V with the softmax's zero point
        # products (quantize.rules._mul): a squeeze-excitation gate (N*C rows of H*W, the gate once
        # per row), a SiLU (equal shapes, one flat loop), a per-channel factor over a batch of 2,
        # a scalar-like factor, and the bound of the int32 intermediate (mul 2**14, shift 31)
        cf.MulSpec(n=1, c=24, inner=49, b_ext=(1, 24, 1), a_zp=-52, b_zp=-128, mul=16384, shift=21, zp=-119),
        cf.MulSpec(n=1, c=1, inner=1001, a_zp=3, b_zp=-128, mul=11585, shift=20, zp=0, lo=-100, hi=120),
        cf.MulSpec(n=2, c=5, inner=7, a_ext=(1, 5, 1), a_zp=-128, b_zp=0, mul=9000, shift=16, zp=-128),
        cf.MulSpec(n=1, c=3, inner=10, a_ext=(1, 1, 1), a_zp=0, b_zp=5, mul=1, shift=0, zp=7),
        cf.MulSpec(n=1, c=4, inner=33, b_ext=(1, 4, 1), a_zp=127, b_zp=127, mul=1 << 14, shift=31, zp=-128),
        # LayerNorm over the last axis (quantize.rules._layernorm): tokens of a small transformer, one
        # channel (a zero variance), and the bounds (2**14 channels, epsilon 2**50, shift 46)
        cf.LayerNormSpec(rows=5, channels=48, eps=2304, shift=26),
        cf.LayerNormSpec(rows=3, channels=1, eps=0, shift=0),
        cf.LayerNormSpec(rows=2, channels=1 << 14, eps=1 << 50, shift=46),
    ]


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
    return resnet + _generated() + _network_kernels()


def case_id(spec):
    return f"{spec.family}-{spec.symbol[-12:]}"
