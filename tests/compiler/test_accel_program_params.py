"""compiler.accel.SCHEDULED_UNREAD_PARAMS: with its schedule fixed, a layer's program does not
depend on the buffer sizes (or the clock): configurations that differ only there get programs
that decode to the same instructions and micro-ops over the same tensors, so the same cycles and
byte counts. dse.evaluate keys the sweep's layer timings on this."""

import pytest

import vdla_sim
from compiler.accel import compile_layer, program_params
from compiler.layers import Conv2D, Dense
from compiler.tensorize.search import searched
from vdla_hw import isa
from vdla_hw.config import Config

SMALL = dict(LOG_INP_BUFF_SIZE=14, LOG_WGT_BUFF_SIZE=15, LOG_ACC_BUFF_SIZE=16, CLOCK_MHZ=100)
LARGE = dict(LOG_INP_BUFF_SIZE=15, LOG_WGT_BUFF_SIZE=18, LOG_ACC_BUFF_SIZE=17, CLOCK_MHZ=200)


def decoded(bundle):
    """What a run reads of a bundle: instructions, micro-ops and tensors, as values (not bits)."""
    uops = isa.decode_uops(bundle.read("uops").view("<u4"), bundle.config)
    return ([i.fields | {"kind": i.kind} for i in bundle.insns()], uops.tolist(),
            {name: bundle.read(name).tobytes() for name in ("inp", "wgt", "bias")})


@pytest.mark.parametrize("block", [4, 5])
@pytest.mark.parametrize("layer", [Conv2D(h=14, w=14, ic=64, oc=64, k=3, stride=1, pad=1, shift=8),
                                   Conv2D(h=14, w=14, ic=64, oc=128, k=1, stride=2, pad=0, shift=8),
                                   Dense(n=1, ic=256, oc=40, shift=6)])
def test_a_scheduled_program_does_not_read_the_buffer_sizes(layer, block):
    small = Config.from_preset("osdi18", LOG_BLOCK=block, **SMALL)
    large = Config.from_preset("osdi18", LOG_BLOCK=block, **LARGE)
    assert program_params(small) == program_params(large) and small.params != large.params
    schedule = searched(layer.as_conv2d(), small).schedule  # fits both (the large buffers hold more)
    a = compile_layer(layer, small, schedule=schedule, store=False)
    b = compile_layer(layer, large, schedule=schedule, store=False)
    assert a.insn_bytes != b.insn_bytes or block == 5  # the encodings differ (wider index fields) ...
    assert decoded(a) == decoded(b)                     # ... the programs do not
    sa, sb = vdla_sim.simulate(a, data=False), vdla_sim.simulate(b, data=False)
    assert (sa.cycles, dict(sa.bytes), sa.gemm_utilization) == (sb.cycles, dict(sb.bytes), sb.gemm_utilization)


def test_store_false_leaves_the_disk_cache_alone(cache_folder):
    from vdla_hw import cache

    layer = Conv2D(h=8, w=8, ic=16, oc=16, k=3, stride=1, pad=1, shift=8)
    compile_layer(layer, "osdi18", store=False)
    assert "layer" not in cache.stats
    compile_layer(layer, "osdi18")
    assert cache.stats["layer"]["miss"] == 1
