"""driver/status.py: the ERROR bit of every error kind comes from the error itself, set where
it is raised (decode in vdla_hw.isa, the static and range checks of vdla_hw.isa/program, the
simulator's token overflow and GEMM hazard), and reaches the sim device's and the register
model's ERROR/ERROR_INSN unchanged (tests/rtl/test_rtl_errors.py compares the range and
overflow cases with the RTL); a timeout on the sim device reads the counters off the
simulator's error instead of simulating the program again."""

from __future__ import annotations

import numpy as np
import pytest

import vdla_sim
from driver import DeviceError, open_device
from driver import status as st
from tests.driver.device_cases import deadlocking_bundle
from tests.driver.test_registers import ModelDevice
from tests.hw.programs import ACC, INP, OUT, UOP, WGT
from vdla_hw import isa, regmap
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.errors import VdlaError
from vdla_sim.engine import Engine
from vdla_sim.progen import random_program

PRESET = "tiny"
E = regmap.ERROR_BITS


def _patched(bundle: Bundle, index: int, field: str, value: int) -> Bundle:
    """``bundle`` with field ``field`` of instruction ``index`` set to ``value`` in the image (a
    value the encoder refuses: an unknown opcode or memory type)."""
    insn = bundle.insns()[index]
    f = isa.layout(insn.kind, bundle.config)[field]
    start = bundle.insn_offset + index * bundle.config.insn_bytes
    dram = bundle.dram.copy()
    word = int.from_bytes(dram[start:start + 16].tobytes(), "little")
    word = (word & ~(((1 << f.width) - 1) << f.lo)) | value << f.lo
    dram[start:start + 16] = np.frombuffer(word.to_bytes(16, "little"), dtype=np.uint8)
    return bundle.with_dram(dram)


def _program(*insns: tuple) -> Bundle:
    """A bundle of ``(kind, fields)`` instructions, one uop (0, 0, 0) in the image, FINISH last."""
    b = BundleBuilder(PRESET)
    b.uops("k", [(0, 0, 0)])
    for kind, fields in insns:
        b.emit(kind, **fields)
    return b.build()


def _hazard() -> Bundle:
    b = BundleBuilder(PRESET)
    k = b.uops("k", [(0, 0, 0), (0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=2, x_stride=2)
    b.emit("GEMM", uop_end=2, iter_out=1, iter_in=1)
    return b.build()


def _overflow() -> Bundle:
    pushes = [("LOAD", {"memory_type": INP, "push_next": 1})] * (BundleBuilder(PRESET).config.TOKEN_QUEUE_DEPTH + 1)
    return _program(*pushes)


def _depth(mem: str) -> int:
    return BundleBuilder(PRESET).config.depth(mem)


UOP_LOAD = ("LOAD", {"memory_type": UOP, "y_size": 1, "x_size": 1, "x_stride": 1})
# error kind -> (bundle, ERROR bit, ERROR_INSN)
CASES = {
    "unknown_opcode": (lambda: _patched(_program(("GEMM", {})), 0, "opcode", 7), "bad_opcode", 0),
    "unknown_alu_opcode": (lambda: _patched(_program(("GEMM", {}), ("ALU", {})), 1, "alu_opcode",
                                            (1 << isa.layout("ALU", BundleBuilder(PRESET).config)["alu_opcode"].width) - 1),
                           "bad_opcode", 1),
    "unknown_memory_type": (lambda: _patched(_program(("LOAD", {})), 0, "memory_type", len(isa.MEM_TYPES)),
                            "bad_memory_type", 0),
    "store_not_out": (lambda: _program(("STORE", {"memory_type": ACC})), "bad_memory_type", 0),
    "load_out": (lambda: _program(UOP_LOAD, ("LOAD", {"memory_type": OUT})), "bad_memory_type", 1),
    "flag_the_module_lacks": (lambda: _program(("LOAD", {"memory_type": INP, "pop_prev": 1})), "bad_flag", 0),
    "finish_pushes": (lambda: _program(UOP_LOAD, ("FINISH", {"push_prev": 1})), "bad_flag", 1),
    "finish_not_last": (lambda: _program(("FINISH", {}), UOP_LOAD), "bad_flag", 0),
    "y_padding_of_wgt": (lambda: _program(("LOAD", {"memory_type": WGT, "y_pad_top": 1})), "bad_flag", 0),
    "x_padding_of_wgt": (lambda: _program(("LOAD", {"memory_type": WGT, "x_pad_left": 1})), "bad_flag", 0),
    "sram_base_past_depth": (lambda: _program(("LOAD", {"memory_type": INP, "sram_base": _depth("inp") - 1, "y_size": 1,
                                                        "x_size": 2, "x_stride": 2})), "sram_range", 0),
    "uop_end_past_depth": (lambda: _program(("GEMM", {"uop_end": _depth("uop") + 1})), "sram_range", 0),
    "uop_range_reversed": (lambda: _program(("GEMM", {"uop_bgn": 2, "uop_end": 1})), "sram_range", 0),
    "loop_past_depth": (lambda: _program(UOP_LOAD, ("GEMM", {"uop_end": 1, "iter_out": 1, "iter_in": _depth("inp") + 1,
                                                             "src_factor_in": 1})), "sram_range", 1),
    "dram_base_past_image": (lambda: _program(("LOAD", {"memory_type": INP, "dram_base": 10_000, "y_size": 1,
                                                        "x_size": 1, "x_stride": 1})), "dram_range", 0),
    "two_dimensional_uop_load": (lambda: _program(("LOAD", {"memory_type": UOP, "y_size": 2, "x_size": 1,
                                                            "x_stride": 1})), "dram_range", 0),
    "stride_below_size": (lambda: _program(("LOAD", {"memory_type": INP, "y_size": 2, "x_size": 2, "x_stride": 1})),
                          "dram_range", 0),
    "token_overflow": (_overflow, "token_overflow", 16),
    "gemm_hazard": (_hazard, "gemm_hazard", 1),
}


def _raised(bundle: Bundle) -> VdlaError:
    with pytest.raises(VdlaError) as info:
        vdla_sim.simulate(bundle)
    return info.value


@pytest.mark.parametrize("name", list(CASES))
def test_each_error_carries_its_register_bit_from_where_it_is_raised(name):
    make, bit, index = CASES[name]
    err = _raised(make())
    assert err.error_bit == bit, f"{name}: {err}"
    assert st.error_bits_for(err) == (E[bit], index)


@pytest.mark.parametrize("name", list(CASES))
def test_sim_device_and_register_model_report_the_bit_of_the_error(name):
    make, bit, index = CASES[name]
    bundle = make()
    with open_device("sim", PRESET) as device, pytest.raises(DeviceError) as info:
        device.run(bundle)
    assert (info.value.state["error"], info.value.state["error_insn"]) == (E[bit], index)
    assert f"error {bit} at instruction {index}:" in str(info.value)
    with ModelDevice(PRESET) as device, pytest.raises(DeviceError) as info:
        device.run(bundle)
    assert (info.value.state["error"], info.value.state["error_insn"]) == (E[bit], index)


def test_an_error_the_hardware_cannot_detect_stops_the_sim_device_with_bad_flag():
    """A race (the simulator's check; the hardware has none) carries no bit of its own."""
    b = BundleBuilder(PRESET)
    y = b.alloc("y", "out", 4)
    b.emit("GEMM", reset=1, uop_end=1, iter_out=4, iter_in=1, dst_factor_out=1)
    b.emit("STORE", memory_type=OUT, dram_base=y, y_size=1, x_size=4, x_stride=4)
    err = _raised(b.build())
    assert isinstance(err, vdla_sim.RaceError) and err.error_bit is None
    assert st.error_bits_for(err) == (E["bad_flag"], 1)


def _replayed(bundle: Bundle, timeout_cycles: int | None) -> tuple[int, dict]:
    """(cycle, counters) where a second run of the engine stops: what the sim device read
    before the error carried them."""
    engine = Engine(bundle, max_cycles=timeout_cycles, race_check=False)
    with pytest.raises((vdla_sim.DeadlockError, vdla_sim.CycleLimitError)):
        engine.run()
    return engine.now, engine.modules()


@pytest.mark.parametrize("case", ["deadlock", "cycle_limit"])
def test_a_hang_reads_the_counters_off_the_error_without_simulating_again(case, monkeypatch):
    bundle = deadlocking_bundle(PRESET) if case == "deadlock" else random_program(3, PRESET, threads=2, blocks=4)
    timeout = None if case == "deadlock" else vdla_sim.simulate(bundle).cycles // 2
    expected = _replayed(bundle, timeout)
    runs = []
    run = Engine.run
    monkeypatch.setattr(Engine, "run", lambda engine: runs.append(engine) or run(engine))
    with open_device("sim", PRESET) as device, pytest.raises(DeviceError) as info:
        device.run(bundle, timeout_cycles=timeout)
    assert len(runs) == 1, "the device simulated the program more than once"
    state = info.value.state
    assert state["timeout"] and (state["cycles"], state["modules"]) == expected
    assert expected[1]["fetch"]["insns"] > 0 and any(c["busy"] for c in expected[1].values())
    limit = "a deadlock" if case == "deadlock" else f"{timeout} cycles"
    assert str(info.value).startswith(f"sim device timed out after {limit}")


def test_every_model_counts_in_the_register_maps_vocabulary():
    """One list of counter names: the counter registers', in the simulator's result and its
    JSON, in the simulator's errors and in the register model."""
    def names(modules):
        return tuple(modules), {tuple(counters) for counters in modules.values()}

    vocabulary = (isa.MODULES, {regmap.MODULE_COUNTERS})
    bundle = random_program(3, PRESET, threads=2, blocks=4)
    result = vdla_sim.simulate(bundle)
    assert names(result.modules) == names(result.as_dict()["modules"]) == vocabulary
    assert sum(result.modules[m]["insns"] for m in isa.EXEC_MODULES) == result.modules["fetch"]["insns"] \
        == bundle.insn_count
    for make, timeout in ((deadlocking_bundle, None), (lambda _: bundle, result.cycles // 2)):
        with pytest.raises((vdla_sim.DeadlockError, vdla_sim.CycleLimitError)) as info:
            vdla_sim.simulate(make(PRESET), max_cycles=timeout)
        assert names(info.value.modules) == vocabulary
    with ModelDevice(PRESET) as device:
        assert device.run(bundle).counters["modules"] == result.modules
