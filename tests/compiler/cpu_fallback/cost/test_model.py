"""Seconds from the analysis: the kernel time's parts, how it scales with shape, and the host
overheads of an offload, computed by hand from the CPU data."""

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback import resnet18
from compiler.cpu_fallback.cost import CpuModel, RuntimeProfile, poll_delay

A9 = CpuModel("cortex-a9")
RUNTIME = RuntimeProfile(register_writes=6, register_reads=27, image_copies=3, poll_first_s=20e-6, poll_max_s=2e-3)


def conv(**shape):
    base = dict(n=1, c=8, h=14, w=14, oc=8, kh=3, kw=3, stride=1, pad=1, shift=8, relu=True)
    return cf.Conv2dSpec(**{**base, **shape})


def test_kernel_cost_is_compute_plus_the_memory_time_not_hidden():
    cost = A9.kernel_cost(conv())
    p = cost.parts
    assert cost.basis == "llvm-mca cortex-a9 + memory model, int8 baseline, 1 thread"
    memory = p["l2_cycles"] + p["dram_cycles"]
    assert cost.cycles == pytest.approx(p["core_cycles"] + p["branch_cycles"] + memory - p["hidden_cycles"])
    assert 0 <= p["hidden_cycles"] <= memory and p["fork_join_cycles"] == 0 and p["cores"] == 1
    assert cost.seconds == pytest.approx(cost.cycles / 650e6)
    assert p["branch_cycles"] == 8 * p["mispredicts"] and cost.bound == "compute"
    # A residual add streams three buffers and does little per byte: DRAM bounds it.
    assert A9.kernel_cost(cf.AddSpec(size=64 * 56 * 56, shift=1, relu=True)).bound == "memory"


@pytest.mark.parametrize("field, factor", [("oc", 2), ("c", 2)])
def test_conv_cycles_scale_with_the_work(field, factor):
    """Twice the output (or input) channels: twice the inner-loop executions, same code shape."""
    small, large = A9.kernel_cost(conv()), A9.kernel_cost(conv(**{field: 8 * factor}))
    assert large.parts["core_cycles"] / small.parts["core_cycles"] == pytest.approx(factor, rel=0.05)


def test_add_cycles_scale_linearly_with_size():
    costs = [A9.kernel_cost(cf.AddSpec(size=n, shift=1, relu=True)).parts["core_cycles"] for n in (4096, 8192, 16384)]
    assert costs[2] - costs[1] == pytest.approx(2 * (costs[1] - costs[0]))


def test_a53_gives_different_times_from_its_own_code():
    spec = conv()
    a53 = CpuModel("cortex-a53").kernel_cost(spec)
    assert a53.basis == "llvm-mca cortex-a53 + memory model, int8 baseline, 1 thread" and a53.seconds != A9.seconds(spec)
    # Its data file applies no miss-handling limits: memory and compute overlap fully (max).
    p = a53.parts
    assert a53.cycles == pytest.approx(max(p["core_cycles"] + p["branch_cycles"], p["l2_cycles"] + p["dram_cycles"]))


def test_poll_delay_by_hand():
    read = 0.31e-6
    # polls at 0.31 us, then after 20+50 us, then 40+50 us: DONE at 100 us is seen at 160.93 us.
    assert poll_delay(100e-6, RUNTIME, read) == pytest.approx(0.31e-6 + 2 * read + 20e-6 + 40e-6 + 100e-6 - 100e-6)
    assert poll_delay(0.0, RUNTIME, read) == pytest.approx(read)
    # Long runs: sleeps stop doubling at 2 ms, so the delay stays below one pause plus slack.
    assert poll_delay(1.0, RUNTIME, read) < 2e-3 + 50e-6 + read


def test_offload_cost_by_hand():
    cpu = A9.cpu
    image = 1 << 20
    host = A9.offload_cost(image_bytes=image, input_bytes=4096, accelerator_s=1e-3, runtime=RUNTIME)
    p = host.parts
    lines = image // 32
    assert p["copy"] == pytest.approx((3 * image + 4096) / 256e6)
    assert p["invalidate"] == pytest.approx(lines * 19 / 650e6)
    assert p["flush"] == pytest.approx(lines * 19 / 650e6 + cpu.l2_bytes / cpu.dram_bytes_per_s)
    assert p["registers"] == pytest.approx(33 * 0.31e-6)
    assert p["pack"] == p["unpack"] == 0
    assert host.seconds == pytest.approx(sum(p.values()))
    pack = cf.PackSpec(n=1, c=64, h=56, w=56)
    with_pack = A9.offload_cost(image_bytes=image, packs=[pack], accelerator_s=1e-3, runtime=RUNTIME)
    assert with_pack.parts["pack"] == pytest.approx(A9.seconds(pack))


def test_resnet18_workload_matches_the_layer_table():
    workload = resnet18.cpu_workload()
    macs = sum(s.work().macs for s in workload["layer0"] + workload["conv"])
    # Table total 1,813.56 M MAC counts padding taps; the kernels skip them.
    assert 0.9 * 1813.56e6 < macs <= 1813.56e6
    adds = [s for s in workload["other"] if s.family == "add"]
    assert sum(s.size for s in adds) == 752_640


def test_prefetched_analyses_equal_in_process_ones(tmp_path, monkeypatch):
    """Kernels analysed ahead in worker processes give the same costs as analysed on demand."""
    from compiler.cpu_fallback.cost import analysis

    monkeypatch.setenv(analysis.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(analysis, "_memo", {})
    specs = [cf.ReluSpec(size=n) for n in (1024, 2048, 4096, 8192)]
    model = CpuModel("cortex-a9", workers=2)
    assert model.prefetch(specs) == 4 and model.prefetch(specs) == 0  # already pending
    ahead = [model.kernel_cost(s).cycles for s in specs]
    assert len(list((tmp_path / "cpu-cost").glob("*.pkl"))) == 4  # the workers filled the disk cache
    monkeypatch.setattr(analysis, "_memo", {})
    monkeypatch.setenv(analysis.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert [CpuModel("cortex-a9", workers=0).kernel_cost(s).cycles for s in specs] == ahead
    assert CpuModel("cortex-a9", workers=0).prefetch(specs) == 0


CTRL_C_IN_A_SUBMIT = """
import os, signal, sys
from concurrent.futures import ProcessPoolExecutor
import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost.model import CpuModel

submit = ProcessPoolExecutor.submit
def interrupted_submit(self, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)      # Ctrl-C while the workers are being started
    return submit(self, *args, **kwargs)
ProcessPoolExecutor.submit = interrupted_submit
model = CpuModel("cortex-a9", workers=2)
try:
    model.prefetch([cf.ReluSpec(size=n) for n in (1024, 2048, 4096, 8192)])
except KeyboardInterrupt:
    print("interrupted after", len(model._pending), "submits", flush=True)
    sys.exit(130)
print("not interrupted")
"""


def test_ctrl_c_while_prefetch_workers_start_is_raised_after_and_no_worker_speaks(tmp_path):
    """A Ctrl-C in the middle of starting the analysis workers is held until all have started
    (a worker cut off in its start-up printed 'EOFError: Ran out of input'), then raised; the
    workers end without a word."""
    import os
    import subprocess
    import sys

    from compiler.cpu_fallback.cost import analysis

    env = {**os.environ, analysis.CACHE_ENV: str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_SUBMIT], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 130 and done.stdout == "interrupted after 4 submits\n", (done.stdout, done.stderr)
    assert done.stderr == ""
