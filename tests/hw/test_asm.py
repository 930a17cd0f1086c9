"""Assembler and disassembler: round trips on every preset, directives, line-numbered errors."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hw.strategies import PRESET_NAMES, insns
from vdla_hw import asm, isa
from vdla_hw.config import load_config
from vdla_hw.errors import AsmError

CONFIGS = {name: load_config(name) for name in PRESET_NAMES}
EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.s"))


def test_every_field_has_a_text_form():
    asm.check_groups_cover_table()


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("kind", list(isa.OPCODES))
@settings(max_examples=40)
@given(data=st.data())
def test_format_parse_round_trip(preset, kind, data):
    config = CONFIGS[preset]
    insn = data.draw(insns(config, kind))
    text = asm.format_insn(insn, config)
    bundle = asm.assemble(f"{text}\nFINISH\n", config=config)
    assert bundle.insns()[0] == insn, text


@pytest.mark.parametrize("preset", PRESET_NAMES)
@settings(max_examples=25)
@given(data=st.data())
def test_disassemble_assemble_round_trip_of_whole_programs(preset, data):
    config = CONFIGS[preset]
    program = data.draw(st.lists(insns(config).filter(lambda i: i.kind != "FINISH"), max_size=12))
    text = "\n".join(asm.format_insn(i, config) for i in program) + "\nFINISH\n"
    bundle = asm.assemble(text, config=config)
    again = asm.assemble(asm.disassemble(bundle), config=config)
    assert again.insns() == bundle.insns() == program + [isa.Insn("FINISH")]


def test_spec_examples_parse_to_the_fields_they_name():
    config = CONFIGS["osdi18"]
    text = ("LOAD inp sram=0 dram=64 y=2 x=4 stride=4 pad=0,0,1,1 push_next\n"
            "GEMM reset uop=0:4 iter=2x3 dst=1,0 src=0,0 wgt=0,0 pop_prev\n"
            "ALU shr uop=0:1 iter=1x4 dst=0,1 src=0,1 imm=-3\n"
            "FINISH pop_next\n")
    load, gemm, alu, finish = asm.assemble(text, config=config).insns()
    assert load == isa.Insn("LOAD", memory_type=2, dram_base=64, y_size=2, x_size=4, x_stride=4,
                            x_pad_left=1, x_pad_right=1, push_next=1)
    assert gemm == isa.Insn("GEMM", reset=1, uop_end=4, iter_out=2, iter_in=3, dst_factor_out=1, pop_prev=1)
    assert alu == isa.Insn("ALU", alu_opcode=3, uop_end=1, iter_out=1, iter_in=4, dst_factor_in=1,
                           src_factor_in=1, use_imm=1, imm=-3)
    assert finish == isa.Insn("FINISH", pop_next=1)


def test_defaults_and_symbols():
    text = (".config tiny\n.data a inp 6 values " + " ".join(str(v) for v in range(24)) + "\n"
            ".uops k 0,1,0 1,2,0\n"
            "LOAD inp sram=0 dram=a+2 x=3\nLOAD uop sram=0 dram=k x=2\nFINISH\n")
    bundle = asm.assemble(text)
    load, uop, _ = bundle.insns()
    assert (load.y_size, load.x_stride, load.dram_base) == (1, 3, bundle.symbols["a"].index + 2)
    assert uop.dram_base == bundle.symbols["k"].index
    assert bundle.read("a").reshape(-1).tolist() == list(range(24))
    assert isa.decode_uops(bundle.read("k").reshape(-1), bundle.config).tolist() == [[0, 1, 0], [1, 2, 0]]


def test_random_data_is_seeded():
    text = ".config tiny\n.data w wgt 2 random 7\nFINISH\n"
    assert np.array_equal(asm.assemble(text).read("w"), asm.assemble(text).read("w"))


@pytest.mark.parametrize("text,line,words", [
    ("NOP\n", 1, "unknown instruction 'NOP'"),
    ("FINISH\nLOAD xyz sram=0\n", 2, "LOAD needs a memory_type"),
    ("LOAD inp sram=70000 x=1\n", 1, "field sram_base: value 70000 does not fit 16 bits"),
    ("GEMM uop=1\n", 1, "uop= takes 2 value(s)"),
    ("GEMM bogus\n", 1, "GEMM has no flag 'bogus'"),
    ("GEMM imm=3\n", 1, "GEMM has no operand 'imm'"),
    ("LOAD inp dram=nowhere x=1\n", 1, "unknown symbol 'nowhere'"),
    ("FINISH\n.config tiny\n", 2, ".config must come before"),
    (".data a inp 2 values 1 2\n", 1, "2 inp elements need"),
    (".frob\n", 1, "unknown directive"),
    ("# nothing\n", 0, "no instructions"),
    ("LOAD inp sram=0 x=4 x=5\n", 1, "LOAD: field x_size is given twice"),
    ("FINISH\nSTORE out x=1 pop_prev pop_prev\n", 2, "STORE: field pop_prev is given twice"),
])
def test_errors_name_file_and_line(text, line, words):
    with pytest.raises(AsmError) as err:
        asm.assemble(text, config="tiny", source="prog.s")
    assert str(err.value).startswith(f"prog.s:{line}: ") and words in str(err.value)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_assemble(path):
    bundle = asm.assemble(path.read_text(), source=str(path))
    assert bundle.insns()[-1].kind == "FINISH"
