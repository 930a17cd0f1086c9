"""Every ALU op checked on its full int32 accumulator results, not only on the int8 a STORE keeps.

A STORE writes the low byte of each accumulator, so an op that gets the high bits wrong (MUL
taking its operand byte unsigned: the error is a multiple of 256; ADD saturating instead of
wrapping) is invisible in DRAM. Here the results are read from the accumulators themselves: of
``alu_op`` directly, of the reference interpreter (``ExecResult.srams``) and of the simulator
(its final SRAM state, ``simulate(..., sram=SramState.fresh(config)).sram``), each against the
plain-Python definition below (docs/spec.md section 4), written independently of numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla_hw import isa
from vdla_hw.bundle import BundleBuilder
from vdla_hw.semantics import alu_op, execute
from vdla_hw.sram_state import SramState
from vdla_sim import simulate


def _wrap(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def _int8(v: int) -> int:
    return (v & 0xFF) - 256 if v & 0x80 else v & 0xFF


def _shr(a: int, b: int) -> int:
    amount = max(-31, min(31, b))
    return a >> amount if amount >= 0 else _wrap(a << -amount)


SPEC = {  # op -> result of (accumulator a, operand b), plain Python integers
    "min": min,
    "max": max,
    "add": lambda a, b: _wrap(a + b),
    "mul": lambda a, b: _wrap(a * _int8(b)),   # the operand's low byte, signed
    "shr": _shr,                               # arithmetic right; negative amounts shift left
}

EDGES = [0, 1, -1, 2, 31, 32, -31, -32, 127, 128, 129, 255, 256, -127, -128, -129, -255, -256,
         0x7FFF, -0x8000, 1 << 24, 0x7FFFFFFF, -0x80000000, 0x7FFFFF80, -0x7FFFFF81]


def test_ops_are_the_table():
    assert set(SPEC) == set(isa.ALU_OPS)


def _values(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([EDGES, rng.integers(-(1 << 31), 1 << 31, n - len(EDGES))]).astype(np.int32)


@pytest.mark.parametrize("op", isa.ALU_OPS)
def test_alu_op_on_every_pair_of_edges_and_random_words(op):
    a = _values(60, 1)
    b = np.concatenate([_values(60, 2), np.arange(-40, 40)]).astype(np.int32)
    got = alu_op(op, np.repeat(a, len(b)), np.tile(b, len(a)))
    assert got.dtype == np.int32
    want = [SPEC[op](int(x), int(y)) for x in a for y in b]
    assert got.tolist() == want


def _program(op: str, a: np.ndarray, b: np.ndarray, imm: int | None):
    """acc[0:n] = a, acc[n:2n] = b; one ALU loop acc[k] = op(acc[k], acc[n + k] or imm), k < n."""
    builder = BundleBuilder("tiny")
    config = builder.config
    shape = config.elem_shape("acc")
    n = len(a) // int(np.prod(shape))
    data = np.concatenate([a, b]).reshape(2 * n, *shape)
    src = builder.array("ab", "acc", data)
    uop = builder.uops("u", [(0, n, 0)])
    mem = isa.MEM_TYPES.index
    builder.emit("LOAD", memory_type=mem("uop"), dram_base=uop, y_size=1, x_size=1, x_stride=1)
    builder.emit("LOAD", memory_type=mem("acc"), dram_base=src, y_size=1, x_size=2 * n, x_stride=2 * n)
    builder.emit("ALU", alu_opcode=isa.ALU_OPS.index(op), uop_end=1, iter_out=1, iter_in=n, dst_factor_out=0,
                 dst_factor_in=1, src_factor_out=0, src_factor_in=1, use_imm=int(imm is not None),
                 imm=0 if imm is None else imm)
    return builder.build(), config, n


CASES = [(op, imm) for op in isa.ALU_OPS for imm in (None, -32768, -200, -3, 0, 5, 200, 255, 32767)
         if imm is None or op != "shr" or -40 <= imm <= 40] + [("shr", s) for s in (-31, -20, 31, 33)]


@pytest.mark.parametrize("op,imm", CASES, ids=[f"{op}-{'reg' if i is None else i}" for op, i in CASES])
def test_reference_and_simulator_accumulators_are_the_int32_results(op, imm):
    a = _values(32, 3)
    b = _values(32, 4)[::-1].copy() if op != "shr" else np.resize(np.arange(-34, 35), 32).astype(np.int32)
    bundle, config, n = _program(op, a, b, imm)
    operand = b.tolist() if imm is None else [imm] * len(a)
    want = [SPEC[op](int(x), int(y)) for x, y in zip(a.tolist(), operand)]
    ref = execute(bundle).srams.acc[:n].reshape(-1)
    assert ref.tolist() == want
    sim = simulate(bundle, sram=SramState.fresh(config)).sram.srams.acc[:n].reshape(-1)
    assert sim.tolist() == want
