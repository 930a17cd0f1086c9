"""One core's share of a kernel split over two cores (cost/threads.py)."""

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost.threads import share
from compiler.cpu_fallback.fp32 import Fp32Conv2dSpec


def conv(**shape):
    return cf.Conv2dSpec(**{**dict(n=1, c=8, h=14, w=14, oc=64, kh=3, kw=3, pad=1, shift=8), **shape})


def test_convs_split_their_output_channel_blocks():
    assert share(conv()).oc == 32
    assert share(conv(oc=24)).oc == 12       # six blocks of four: three each
    assert share(conv(oc=20)).oc == 12       # five blocks: the larger share has three
    assert share(conv(oc=4)) is None          # one block: one core
    assert share(Fp32Conv2dSpec(n=1, c=8, h=14, w=14, oc=40, kh=3, kw=3, pad=1, vc=8)).oc == 24
    grouped = share(cf.Conv2dSpec(n=1, c=8, h=9, w=9, oc=12, kh=3, kw=3, groups=4, shift=1))
    assert (grouped.groups, grouped.c, grouped.oc) == (2, 4, 6)


def test_other_kernels_split_their_outer_axis_or_not_at_all():
    assert share(cf.AddSpec(size=100, shift=1)).size == 64      # seven 16-element chunks: four
    assert share(cf.AddSpec(size=16, shift=1)) is None
    assert share(cf.DenseSpec(n=1, k=512, m=1000, out_dtype="int32")).m == 500
    assert share(cf.MaxPool2dSpec(n=1, c=64, h=112, w=112, kh=3, kw=3, stride=2, pad=1)).c == 32
    assert share(cf.PackSpec(n=1, c=64, h=56, w=56)) is None
