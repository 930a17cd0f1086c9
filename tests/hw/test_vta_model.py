"""Reference semantics (`vdla exec`) vs a model of VTA's semantics (tests/hw/vta_model.py), through
`vdla export-vta --flat`: random and fixed programs leave the same image on both once the model
computes the named differences (vta_model.DIFFERENCES) VDLA's way, and each difference is real
(a program shows it). During development the model itself was checked against VTA's fsim
(docs/vta.md, "Checked against VTA's fsim").
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.hw import vta_model
from tests.hw.programs import ACC, ALU, INP, OUT, UOP, fixed_corpus
from vdla_hw import isa
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.semantics import execute
from vdla_hw.vta_format import export_dir
from vdla_sim.progen import random_program

ALL = frozenset(vta_model.DIFFERENCES)


def data(bundle: Bundle, image: np.ndarray) -> np.ndarray:
    """The image without the instruction stream (its dram_base fields are VTA's in the model's)."""
    keep = np.ones(bundle.dram.size, dtype=bool)
    keep[bundle.insn_offset:bundle.insn_offset + 16 * bundle.insn_count] = False
    return image[keep]


def on_model(bundle: Bundle, tmp_path, vdla=ALL) -> np.ndarray:
    folder = tmp_path / "flat"
    export_dir(bundle, folder, flat=True)
    return vta_model.run_flat(folder, bundle.config, vdla=vdla)


def assert_same(bundle: Bundle, tmp_path, vdla=ALL) -> None:
    mine, theirs = data(bundle, execute(bundle).dram), data(bundle, on_model(bundle, tmp_path, vdla))
    diff = np.flatnonzero(mine != theirs)
    assert diff.size == 0, f"{diff.size} bytes differ, the first at data byte {diff[0]}"


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("preset", ["tiny", "vta-pynq"])
def test_reference_vs_vta_model_on_random_programs(tmp_path, seed, preset):
    assert_same(random_program(seed, preset), tmp_path)


@pytest.mark.parametrize("name, bundle", fixed_corpus("tiny"), ids=lambda v: v if isinstance(v, str) else "")
def test_reference_vs_vta_model_on_fixed_programs(tmp_path, name, bundle):
    assert_same(bundle, tmp_path)


def _acc_program(alus: list[dict], acc_values) -> Bundle:
    """LOAD 2 ACC vectors, the ALU instructions ``alus`` on vector 0 (with vector 1 or an
    immediate), STORE vectors 0..1."""
    b = BundleBuilder("tiny")
    shape = b.config.elem_shape("acc")
    src = b.array("src", "acc", np.asarray(acc_values, dtype=np.int64).reshape(2, *shape))
    dst = b.alloc("dst", "out", 2)
    k = b.uops("k", [(0, 1, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=1, x_size=2, x_stride=2)
    for alu in alus:
        b.emit("ALU", uop_end=1, iter_out=1, iter_in=1, **alu)
    b.emit("LOAD", memory_type=ACC, push_next=1)
    b.emit("STORE", memory_type=OUT, pop_prev=1, push_prev=1, dram_base=dst, y_size=1, x_size=2, x_stride=2)
    b.emit("FINISH", pop_next=1)
    return b.build()


N = 4  # tiny: BLOCK_OUT 4
SHOWN = {  # a program for each difference the reference semantics still has
    "store_reads_acc": _acc_program([], [[5, -3, 300, 7], [1, 2, 3, 4]]),
    # the low 8 bits of a product depend only on the operands' low 8 bits: shift the high ones down
    "mul_full_operand": _acc_program([dict(alu_opcode=ALU["mul"]), dict(alu_opcode=ALU["shr"], use_imm=1, imm=8)],
                                     [[1, 2, 3, 4], [256 + 3, 1000, -129, 2]]),
    "shr_amount": _acc_program([dict(alu_opcode=ALU["shr"])], [[1 << 20, -(1 << 20), 77, 5], [33, 40, -33, 100]]),
}


@pytest.mark.parametrize("difference", sorted(SHOWN))
def test_each_named_difference_changes_a_program(tmp_path, difference):
    bundle = SHOWN[difference]
    assert_same(bundle, tmp_path)  # VDLA's way everywhere: the reference's image
    vta = data(bundle, on_model(bundle, tmp_path, ALL - {difference}))
    assert not np.array_equal(vta, data(bundle, execute(bundle).dram)), difference


def dst_values(bundle: Bundle, image: np.ndarray) -> list[int]:
    lo, hi = bundle.symbols["dst"].byte_range(bundle.config)
    return image[lo:hi].view(np.int8).tolist()


def test_alu_reset_is_ignored_and_y0_loads_pad_on_both(tmp_path):
    """The two behaviours issue 25 aligned with VTA: the model (VTA's) and `vdla exec` agree on them."""
    reset = _acc_program([dict(alu_opcode=ALU["add"], reset=1, use_imm=1, imm=0)], [[9, 8, 7, 6], [1, 1, 1, 1]])
    assert dst_values(reset, on_model(reset, tmp_path))[:N] == [9, 8, 7, 6]
    assert dst_values(reset, execute(reset).dram)[:N] == [9, 8, 7, 6]

    b = BundleBuilder("tiny")
    shape = b.config.elem_shape("acc")
    src = b.array("src", "acc", np.full((2, *shape), 5))
    dst = b.alloc("dst", "out", 2)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=1, x_size=2, x_stride=2)
    b.emit("LOAD", memory_type=ACC, dram_base=src, y_size=0, x_size=2, x_stride=2, y_pad_top=1)
    b.emit("ALU", uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1, src_factor_out=1, alu_opcode=ALU["add"],
           use_imm=1, imm=0)
    b.emit("LOAD", memory_type=ACC, push_next=1)
    b.emit("STORE", memory_type=OUT, pop_prev=1, push_prev=1, dram_base=dst, y_size=1, x_size=2, x_stride=2)
    b.emit("FINISH", pop_next=1)
    prog = b.build()
    assert dst_values(prog, on_model(prog, tmp_path)) == [0] * 2 * N  # the padding rows
    assert dst_values(prog, execute(prog).dram) == [0] * 2 * N


def _flat(bundle, tmp_path):
    export_dir(bundle, tmp_path / "f", flat=True)
    return vta_model.read_flat(tmp_path / "f")


def test_the_model_waits_for_a_token_pushed_later_in_program_order(tmp_path):
    """VTA's modules wait on a token queue; the reference interprets in program order."""
    b = BundleBuilder("tiny")
    dst = b.alloc("dst", "out", 1)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("STORE", memory_type=OUT, pop_prev=1, dram_base=dst, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("ALU", uop_end=1, iter_out=1, iter_in=1, alu_opcode=ALU["add"], use_imm=1, imm=-2, push_next=1)
    b.emit("FINISH")
    prog = b.build()
    image, insn_phys, count = _flat(prog, tmp_path)
    final = vta_model.run(image, insn_phys, count, "tiny", vdla=ALL)
    lo, hi = prog.symbols["dst"].byte_range(prog.config)
    assert list(final[lo:hi].view(np.int8)) == [-2] * N


def test_the_model_reports_a_deadlock(tmp_path):
    b = BundleBuilder("tiny")
    b.emit("LOAD", memory_type=INP, pop_next=1)  # waits for c2l, which nobody pushes
    b.emit("FINISH", pop_next=1)                 # waits for s2c, likewise
    image, insn_phys, count = _flat(b.build(), tmp_path)
    with pytest.raises(vta_model.ModelError, match="deadlock"):
        vta_model.run(image, insn_phys, count, "tiny")
