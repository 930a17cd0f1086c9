"""Driver test bodies shared by every backend (sim and rtl in tests/driver, pynq in tests/board).

Each ``case_*`` takes an ``open_device(config) -> Device`` factory, so one body checks every
backend against the reference semantics (``vdla_hw.semantics.execute``), as VTA ran one test
body on every target. Bundles use the small ``tiny`` preset so the RTL runs fast.
"""

from __future__ import annotations

import numpy as np
import pytest

from driver import DeviceError
from tests.hw import programs
from vdla_hw.bundle import BundleBuilder
from vdla_hw.semantics import execute

PRESET = "tiny"


def deadlocking_bundle(preset: str = PRESET):
    """A GEMM that pops an L2C token no LOAD ever pushes: the device waits forever."""
    b = BundleBuilder(preset)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=programs.UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("GEMM", pop_prev=1, uop_end=1, iter_out=1, iter_in=1)
    return b.build()


def out_of_range_bundle(preset: str = PRESET):
    """A LOAD of input rows past the end of the DRAM image (instruction 0)."""
    b = BundleBuilder(preset)
    src = b.alloc("a", "inp", 2)
    b.emit("LOAD", memory_type=programs.INP, dram_base=src + 1000, y_size=1, x_size=2, x_stride=2)
    return b.build()


def case_runs_like_the_reference(open_device):
    bundle, expected, _ = programs.blocked_matmul(PRESET)
    with open_device(PRESET) as device:
        result = device.run(bundle)
    np.testing.assert_array_equal(result.dram, execute(bundle).dram)
    np.testing.assert_array_equal(bundle.read("out", result.dram), expected["out"])
    assert result.cycles > 0 and result.seconds == pytest.approx(result.cycles / device.config.clock_hz)
    assert result.counters["cycles"] == result.cycles
    modules = result.counters["modules"]
    assert modules["compute"]["insns"] >= 2 and modules["store"]["insns"] >= 1
    assert device.counters()["cycles"] == result.cycles
    return result


def case_buffers_round_trip(open_device):
    with open_device(PRESET) as device:
        a, b = device.allocate(1000), device.allocate(24)
        assert a.address != b.address and a.size == 1000
        data = np.arange(1000, dtype=np.uint16).astype(np.uint8)
        device.write(a, data)
        device.write(a, b"\xff\xfe", offset=998)
        back = device.read(a)
        assert back[:998].tolist() == data[:998].tolist() and back[998:].tolist() == [255, 254]
        assert device.read(a, 10, 5).tolist() == data[10:15].tolist()
        with pytest.raises(DeviceError, match="overflows"):
            device.write(b, np.zeros(25, np.uint8))
        device.free(a)
        device.free(b)


def case_loaded_model_runs_twice(open_device):
    """A loaded model: the image is written once; each run writes only the input symbol and
    reads only the output symbol, and gives the reference's result for its own input."""
    bundle, expected, _ = programs.blocked_matmul(PRESET, seed=3)
    other, _, _ = programs.blocked_matmul(PRESET, seed=4)  # same program, other inputs
    c = bundle.config
    with open_device(PRESET) as device:
        model = device.loaded_model()
        loaded = model.load("mm", bundle, ("a",), ("out",))
        first, moved = model.run("mm", {"a": bundle.read("a")})
        np.testing.assert_array_equal(bundle.read("out", first.dram), expected["out"])
        second, again = model.run("mm", {"a": other.read("a")})
        # the other input with the first bundle's weights (they stayed in the buffer)
        ref = execute(fill(bundle, "a", other.read("a")))
        np.testing.assert_array_equal(bundle.read("out", second.dram), bundle.read("out", ref.dram))
        assert first.cycles > 0 and second.cycles > 0
    (a_lo, a_hi), (o_lo, o_hi) = bundle.symbols["a"].byte_range(c), bundle.symbols["out"].byte_range(c)
    assert moved == again == {"weights": 0, "uops": 0, "insns": 0, "activations_in": a_hi - a_lo,
                              "activations_out": o_hi - o_lo, "other": 0}
    w_lo, w_hi = bundle.symbols["w"].byte_range(c)
    k_lo, k_hi = bundle.symbols["k"].byte_range(c)
    assert loaded["weights"] == w_hi - w_lo and loaded["uops"] == k_hi - k_lo
    assert loaded["insns"] == bundle.insn_count * c.insn_bytes and sum(loaded.values()) == bundle.dram.size
    assert model.moved.runs["activations_in"] == 2 * (a_hi - a_lo)
    return device


def fill(bundle, symbol, values):
    """``bundle`` with ``values`` in its symbol (for the reference of a run with other inputs)."""
    lo, hi = bundle.symbols[symbol].byte_range(bundle.config)
    dram = bundle.dram.copy()
    dram[lo:hi] = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
    return bundle.with_dram(dram)


def case_start_and_wait(open_device):
    """The split API: allocate, write, start, wait, read back from the buffer."""
    bundle, expected, _ = programs.blocked_matmul(PRESET, seed=7)
    with open_device(PRESET) as device:
        buf = device.allocate(bundle.dram.size + 64)
        device.write(buf, bundle.dram)
        device.start(bundle, buf)
        result = device.wait(timeout_s=60)
        image = device.read(buf, 0, bundle.dram.size)
        device.free(buf)
    np.testing.assert_array_equal(image, result.dram)
    np.testing.assert_array_equal(bundle.read("out", image), expected["out"])


def case_bundle_for_another_configuration(open_device):
    bundle, _, _ = programs.blocked_matmul(PRESET)
    with open_device("osdi18") as device:
        with pytest.raises(DeviceError, match="built for 1x4_.*recompile"):
            device.run(bundle)


def case_timeout_names_each_module(open_device, **timeout):
    """A deadlocked program ends in a DeviceError naming every module's state; the device then
    runs the next program normally."""
    with open_device(PRESET) as device:
        with pytest.raises(DeviceError) as info:
            device.run(deadlocking_bundle(), **timeout)
        message = str(info.value)
        assert "timed out" in message or "hang" in message
        if "timed out" in message:
            for module in ("fetch", "load", "compute", "store"):
                assert f"{module}: " in message
            assert info.value.state["modules"]["compute"]["insns"] == 1  # the uop LOAD retired
        case_runs_like_the_reference(lambda config: _Reuse(device))


def case_device_error_names_instruction(open_device):
    with open_device(PRESET) as device:
        with pytest.raises(DeviceError, match="dram_range at instruction 0"):
            device.run(out_of_range_bundle())
        bundle, expected, _ = programs.blocked_matmul(PRESET)
        np.testing.assert_array_equal(bundle.read("out", device.run(bundle).dram), expected["out"])


class _Reuse:
    """An already open device as a context manager that does not close it."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        return self.device

    def __exit__(self, *exc):
        return False


CASES = {name[5:]: fn for name, fn in dict(globals()).items() if name.startswith("case_")}
