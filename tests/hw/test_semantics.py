"""Reference semantics of each instruction against numpy written independently here.

Modelled on VTA's instruction tests: load/store, padded loads, GEMM with reset and
accumulation over two-level loops, each ALU op with immediate and vector operands, ReLU and
shift-and-clip; plus the token rule and the program errors.
"""

import numpy as np
import pytest

from tests.hw import programs
from tests.hw.strategies import PRESET_NAMES
from vdla_hw import asm
from vdla_hw.bundle import BundleBuilder
from vdla_hw.errors import ProgramError
from vdla_hw.semantics import execute


def wrap(values):
    return ((np.asarray(values, dtype=np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int64)


def low8(values):
    return (np.asarray(values, dtype=np.int64) & 0xFF).astype(np.uint8).view(np.int8)


def check(bundle, expected):
    result = execute(bundle)
    for name, want in expected.items():
        np.testing.assert_array_equal(bundle.read(name, result.dram), want)
    return result


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_load_store_round_trip_vs_numpy(preset):
    bundle, expected = programs.load_store_round_trip(preset)
    result = check(bundle, expected)
    assert result.counters.store_bytes == 3 * 5 * bundle.config.elem_bytes("out")


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("pads", [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1), (2, 1, 3, 2)],
                         ids=["top", "bottom", "left", "right", "all"])
def test_padded_load_vs_numpy_pad(preset, pads):
    check(*programs.padded_load(preset, pads))


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 3, 2), (4, 2, 4), (2, 1, 3)])
def test_gemm_reset_and_accumulate_vs_numpy_matmul(preset, shape):
    bundle, expected, full = programs.blocked_matmul(preset, *shape)
    result = check(bundle, expected)
    m, k, n = shape
    assert result.counters.gemm_uops == n * m + n * k * m  # reset pass + accumulate pass


def test_gemm_accumulation_wraps_at_32_bits():
    b = BundleBuilder("tiny")
    c = b.config
    big = b.array("acc0", "acc", np.full((1, c.batch, c.block_out), (1 << 31) - 1))
    one = b.array("one", "inp", np.ones((1, c.batch, c.block_in)))
    w = b.array("w", "wgt", np.ones((1, c.block_out, c.block_in)))
    out = b.alloc("out", "out", 1)
    k = b.uops("k", [(0, 0, 0)])
    b.emit("LOAD", memory_type=0, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=3, dram_base=big, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=1, dram_base=w, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=2, dram_base=one, y_size=1, x_size=1, x_stride=1, push_next=1)
    b.emit("GEMM", pop_prev=1, uop_end=1, iter_out=1, iter_in=1, push_next=1)
    b.emit("STORE", memory_type=4, dram_base=out, y_size=1, x_size=1, x_stride=1, pop_prev=1)
    bundle = b.build()
    want = low8(wrap((1 << 31) - 1 + c.block_in))
    np.testing.assert_array_equal(bundle.read("out", execute(bundle).dram), np.full((1, c.batch, c.block_out), want))


NUMPY_ALU = {
    "min": lambda a, b: np.minimum(a, b),
    "max": lambda a, b: np.maximum(a, b),
    "add": lambda a, b: wrap(a + b),
    "mul": lambda a, b: wrap(a * low8(b).astype(np.int64)),
    "shr": lambda a, b: wrap(np.where(np.clip(b, -31, 31) >= 0, a >> np.clip(b, 0, 31),
                                      a << np.clip(-b, 0, 31))),
}


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("op", list(NUMPY_ALU))
@pytest.mark.parametrize("imm", [None, -7, 5, 0])
def test_alu_vs_numpy(preset, op, imm):
    kwargs = {}
    if op == "shr" and imm is None:
        kwargs["operand_values"] = np.arange(-40, 40, 5).reshape(1, 1, -1)[..., :programs.BundleBuilder(preset).config.block_out]
    bundle, x, y = programs.alu_program(preset, op, imm=imm, **kwargs)
    result = execute(bundle)
    np.testing.assert_array_equal(bundle.read("out", result.dram), low8(NUMPY_ALU[op](x, y)))
    assert result.counters.alu_uops == 6


@pytest.mark.parametrize("amount", [-40, -31, -1, 0, 1, 31, 40])
def test_shr_clamps_and_negative_shifts_left(amount):
    bundle, x, _ = programs.alu_program("tiny", "shr", imm=None, acc_values=12345, operand_values=amount)
    want = wrap(12345 << min(-amount, 31)) if amount < 0 else np.int64(12345) >> min(amount, 31)
    np.testing.assert_array_equal(bundle.read("out", execute(bundle).dram), np.broadcast_to(low8(want), x.shape))


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_relu_vs_numpy(preset):
    check(*programs.requantize_program(preset, shift=0, lo=0))


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("shift", [1, 7, 12])
def test_shift_and_clip_vs_numpy(preset, shift):
    check(*programs.requantize_program(preset, shift=shift, lo=-128))


def test_pop_from_empty_queue_names_instruction_and_queue():
    bundle = asm.assemble("GEMM uop=0:0 pop_prev\nFINISH\n", config="tiny")
    with pytest.raises(ProgramError, match=r"instruction 0 \(GEMM\): pop_prev: pops the empty l2c token queue"):
        execute(bundle)


def test_leftover_tokens_are_reported():
    bundle = asm.assemble("LOAD inp push_next\nLOAD wgt push_next\nFINISH\n", config="tiny")
    assert execute(bundle).tokens_left == {"l2c": 2, "c2l": 0, "c2s": 0, "s2c": 0}


@pytest.mark.parametrize("text,index,field", [
    ("LOAD inp sram=126 x=3\nFINISH\n", 0, "sram_base"),
    ("LOAD inp dram=1000 x=3\nFINISH\n", 0, "dram_base"),
    (".uops k 63,0,0\nLOAD uop dram=k x=1\nGEMM uop=0:1 iter=2x1 dst=1,0\nFINISH\n", 1, "uop.dst_idx/dst_factor_*"),
    (".uops k 0,0,20\nLOAD uop dram=k x=1\nGEMM uop=0:1 iter=2x1 wgt=20,0\nFINISH\n", 1, "uop.wgt_idx/wgt_factor_*"),
    ("GEMM uop=0:300\nFINISH\n", 0, "uop_end"),
    ("LOAD inp x=1\n", 0, "opcode"),
    ("FINISH\nLOAD inp x=1\nFINISH\n", 0, "opcode"),
    ("STORE out pop_next\nFINISH\n", 0, "pop_next"),
])
def test_program_errors_name_instruction_and_field(text, index, field):
    with pytest.raises(ProgramError) as err:
        execute(asm.assemble(text, config="tiny"))
    assert (err.value.index, err.value.field) == (index, field)


# --- issue 25: aligned with VTA's hardware (docs/spec.md section 4) ---------------------------

@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_alu_ignores_the_reset_bit(preset):
    check(*programs.alu_reset_program(preset))


def with_alu_reset(bundle):
    """``bundle`` with the reset bit set on every ALU instruction."""
    from vdla_hw import isa
    insns = [insn.replace(reset=1) if insn.kind == "ALU" else insn for insn in bundle.insns()]
    dram = bundle.dram.copy()
    dram[bundle.insn_offset:bundle.insn_offset + len(insns) * 16] = np.frombuffer(
        isa.encode_program(insns, bundle.config), dtype=np.uint8)
    return bundle.with_dram(dram)


@pytest.mark.parametrize("op", list(programs.ALU))
@pytest.mark.parametrize("imm", [None, -3])
def test_alu_with_reset_equals_alu_without(op, imm):
    plain, _, _ = programs.alu_program("tiny", op, imm=imm)
    flagged = with_alu_reset(plain)
    assert any(i.kind == "ALU" and i.reset for i in flagged.insns())
    np.testing.assert_array_equal(execute(flagged).dram[:plain.insn_offset], execute(plain).dram[:plain.insn_offset])


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("mem,pads", [("inp", (1, 2, 1, 1)), ("acc", (1, 2, 1, 1)), ("inp", (2, 0, 0, 1)),
                                      ("acc", (0, 3, 2, 0))], ids=["inp", "acc", "inp_top", "acc_bottom"])
def test_load_with_y_size_0_writes_its_padding_rows(preset, mem, pads):
    bundle, expected = programs.pad_rows_only(preset, mem, pads)
    result = check(bundle, expected)
    assert result.counters.load_bytes[mem] == bundle.config.elem_bytes(mem) * len(expected["dst"])  # the data LOAD only


def test_load_with_y_size_0_reads_no_dram_and_x_size_0_writes_nothing():
    # y_size 0: the DRAM base may lie past the image (no row is read); the SRAM footprint is checked
    execute(asm.assemble("LOAD inp dram=100000 y=0 x=2 pad=1,1,0,0\nFINISH\n", config="tiny"))
    with pytest.raises(ProgramError, match="sram_base"):
        execute(asm.assemble("LOAD inp sram=125 y=0 x=2 pad=1,1,0,0\nFINISH\n", config="tiny"))
    # x_size 0 (VTA's fsim returns early; its HLS would pad): nothing written, nothing checked
    execute(asm.assemble("LOAD inp sram=127 y=2 x=0 pad=1,1,1,1\nFINISH\n", config="tiny"))


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_a_pop_waits_for_a_token_pushed_later_in_program_order(preset):
    check(*programs.token_wait_program(preset))


def test_deadlock_names_the_first_waiting_instruction_on_one_line():
    text = "LOAD inp pop_next push_next\nGEMM uop=0:0 pop_prev push_prev\nFINISH\n"
    with pytest.raises(ProgramError, match=r"^instruction 0 \(LOAD\): pop_next: pops the empty c2l token queue"
                       r".*deadlock.*instruction 1 \(GEMM\) waits on l2c\)$") as err:
        execute(asm.assemble(text, config="tiny"))
    assert "\n" not in str(err.value)


def test_program_order_is_kept_when_every_token_is_already_there():
    # the load module's LOAD waits for the GEMM's c2l token; the GEMM runs first although later
    text = ("LOAD inp x=1 pop_next push_next\nGEMM uop=0:0 push_prev\nGEMM uop=0:0 pop_prev\nFINISH\n")
    result = execute(asm.assemble(text, config="tiny"))
    assert result.tokens_left == {"l2c": 0, "c2l": 0, "c2s": 0, "s2c": 0}
