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


def test_spatial_pack_shares_read_the_packed_input_in_step():
    """Two cores walk data_vec tile by tile in step: the pair's DRAM lines are one core's stream
    plus the other core's own weights and outputs, not the whole kernel's single stream (which
    re-reads data_vec from DRAM per channel block once it outgrows the L2: r12's 800 kB)."""
    from compiler.cpu_fallback.cost import CpuModel, analysis, cpus
    from compiler.cpu_fallback.cost.threads import split_args

    spec = Fp32Conv2dSpec(n=1, c=64, h=56, w=56, oc=128, kh=1, kw=1, stride=2, vh=1, vw=2, vc=16,
                          ann_reduce=("none", "none"))
    part = share(spec)
    assert split_args(spec) == ("wgt", "bias", "out") and part.oc == 64
    cpu = cpus.load_cpu("cortex-a9")
    whole, own = analysis.analyse(spec, cpu), analysis.analyse(part, cpu)
    other = sum(-(-a.nbytes // 32) for a in part.args() if a.name in ("wgt", "bias", "out"))
    lines = own.l2_misses + other
    assert lines < whole.l2_misses          # the single stream fetched data_vec once per block
    written = sum(a.nbytes for a in spec.args() if not a.is_input)
    parts = CpuModel(cpu, threads=2, workers=0).kernel_cost(spec).parts
    assert parts["dram_bytes"] == 32 * lines + -(-written // 32) * 32
    assert split_args(cf.AddSpec(size=100, shift=1)) is None   # no rule: the whole kernel's stream
