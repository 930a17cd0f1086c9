"""ISA: encode/decode round trips on every preset, layout rules, and rejected values."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hw.strategies import PRESET_NAMES, insns
from vdla_hw import isa
from vdla_hw.config import load_config
from vdla_hw.errors import EncodingError, ProgramError

CONFIGS = {name: load_config(name) for name in PRESET_NAMES}


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("kind", list(isa.OPCODES))
@settings(max_examples=60)
@given(data=st.data())
def test_encode_decode_round_trip(preset, kind, data):
    config = CONFIGS[preset]
    insn = data.draw(insns(config, kind, canonical=False))
    word = isa.encode(insn, config)
    assert len(word) == 16
    assert isa.decode(word, config) == insn


@pytest.mark.parametrize("preset", PRESET_NAMES)
@settings(max_examples=200)
@given(data=st.data())
def test_no_two_opcodes_decode_alike(preset, data):
    config = CONFIGS[preset]
    insn = data.draw(insns(config))
    assert isa.decode(isa.encode(insn, config), config).kind == insn.kind


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_fields_do_not_overlap_or_cross_words(preset):
    config = CONFIGS[preset]
    for kind in isa.OPCODES:
        used = 0
        for f in isa.layout(kind, config).values():
            mask = ((1 << f.width) - 1) << f.lo
            assert not used & mask, f"{kind}.{f.name} overlaps"
            assert f.lo // 64 == (f.lo + f.width - 1) // 64, f"{kind}.{f.name} crosses bit 64"
            used |= mask
        assert used < 1 << 128


def test_vta_pynq_layout_matches_spec_section_3():
    config = CONFIGS["vta-pynq"]
    load = isa.layout("LOAD", config)
    assert [(load[n].lo, load[n].width) for n in ("memory_type", "sram_base", "dram_base", "y_size", "x_pad_right")] == \
        [(7, 3), (10, 16), (26, 32), (64, 16), (124, 4)]
    gemm = isa.layout("GEMM", config)
    assert (gemm["uop_bgn"].width, gemm["uop_end"].width, gemm["iter_out"].width) == (13, 14, 14)
    assert gemm["dst_factor_out"].lo == 64 and gemm["wgt_factor_in"].width == 10
    alu = isa.layout("ALU", config)
    assert alu["src_factor_in"].width == 11 and alu["imm"].signed and alu["imm"].lo + 16 == 128
    uop = isa.uop_layout(config)
    assert [(f.lo, f.width) for f in uop.values()] == [(0, 11), (11, 11), (22, 10)]


def test_osdi18_differs_only_in_weight_index():
    a, b = CONFIGS["osdi18"], CONFIGS["vta-pynq"]
    for kind in isa.OPCODES:
        for name, f in isa.layout(kind, a).items():
            if "wgt" not in name:
                assert f.width == isa.layout(kind, b)[name].width
    assert isa.layout("GEMM", a)["wgt_factor_out"].width == 7


@pytest.mark.parametrize("kind,field,value", [
    ("LOAD", "sram_base", 1 << 16), ("LOAD", "x_pad_left", 16), ("LOAD", "dram_base", -1),
    ("GEMM", "iter_out", 1 << 14), ("GEMM", "uop_end", 1 << 14), ("ALU", "imm", 1 << 15),
    ("ALU", "imm", -(1 << 15) - 1), ("GEMM", "wgt_factor_in", 128), ("FINISH", "pop_next", 2),
])
def test_overflowing_field_is_rejected_naming_instruction_and_field(kind, field, value):
    with pytest.raises(EncodingError) as err:
        isa.encode(isa.Insn(kind, **{field: value}), CONFIGS["osdi18"], index=7)
    assert f"instruction 7 {kind}: field {field}" in str(err.value)


def test_unknown_field_is_rejected():
    with pytest.raises(EncodingError, match="not a field of FINISH"):
        isa.encode(isa.Insn("FINISH", sram_base=1), CONFIGS["tiny"])


@pytest.mark.parametrize("opcode", [5, 6, 7])
def test_unknown_opcode_is_a_decode_error(opcode):
    with pytest.raises(EncodingError, match=f"instruction 3 instruction: field opcode: unknown opcode {opcode}"):
        isa.decode(opcode.to_bytes(16, "little"), CONFIGS["tiny"], index=3)


def test_unknown_memory_type_and_alu_opcode():
    config = CONFIGS["tiny"]
    word = int.from_bytes(isa.encode(isa.Insn("LOAD"), config), "little") | (6 << isa.layout("LOAD", config)["memory_type"].lo)
    with pytest.raises(EncodingError, match="memory_type: unknown memory type 6"):
        isa.decode(word.to_bytes(16, "little"), config)
    alu = isa.layout("ALU", config)["alu_opcode"]
    word = isa.OPCODES["ALU"] | (7 << alu.lo)
    with pytest.raises(EncodingError, match="alu_opcode: unknown ALU opcode 7"):
        isa.decode(word.to_bytes(16, "little"), config)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@settings(max_examples=50)
@given(data=st.data())
def test_uop_round_trip(preset, data):
    config = CONFIGS[preset]
    rows = data.draw(st.lists(st.tuples(*[st.integers(0, f.high) for f in isa.uop_layout(config).values()]),
                              min_size=1, max_size=20))
    assert isa.decode_uops(isa.encode_uops(rows, config), config).tolist() == [list(r) for r in rows]


def test_uop_overflow_names_the_field():
    config = CONFIGS["tiny"]
    with pytest.raises(EncodingError, match="micro-op: field wgt_idx: uop 1: value 32"):
        isa.encode_uops([(0, 0, 0), (0, 0, 32)], config)


@pytest.mark.parametrize("insn,field", [
    (isa.Insn("LOAD", memory_type=2, pop_prev=1), "pop_prev"),       # load module: next flags only
    (isa.Insn("LOAD", memory_type=1, push_prev=1), "push_prev"),
    (isa.Insn("STORE", memory_type=4, push_next=1), "push_next"),    # store module: prev flags only
    (isa.Insn("STORE", memory_type=4, pop_next=1), "pop_next"),
    (isa.Insn("FINISH", push_next=1), "push_next"),                  # FINISH may pop but not push
    (isa.Insn("STORE", memory_type=2), "memory_type"),
    (isa.Insn("LOAD", memory_type=4), "memory_type"),
    (isa.Insn("LOAD", memory_type=1, x_pad_left=1), "x_pad_left"),   # no padding for wgt
    (isa.Insn("LOAD", memory_type=0, y_size=2, x_size=1, x_stride=1), "y_size"),  # uop loads are 1-D
    (isa.Insn("GEMM", uop_bgn=3, uop_end=2), "uop_end"),
])
def test_static_rules_name_the_field(insn, field):
    with pytest.raises(ProgramError) as err:
        isa.check_insn(insn, CONFIGS["tiny"], 4)
    assert err.value.field == field and "instruction 4" in str(err.value)


def test_compute_module_may_use_all_four_flags():
    insn = isa.Insn("GEMM", pop_prev=1, pop_next=1, push_prev=1, push_next=1)
    isa.check_insn(insn, CONFIGS["tiny"], 0)
    assert isa.pops(insn) == ["l2c", "s2c"] and isa.pushes(insn) == ["c2l", "c2s"]
    assert isa.Insn("LOAD", memory_type=3).module == "compute"
    assert isa.Insn("LOAD", memory_type=2).module == "load"


# --- the Insn object: plain attributes, a vectorised program decoder -------------------------
def test_every_field_of_the_table_is_a_plain_attribute():
    """Each ISA field reads as an attribute without __getattr__ (Insn has none): the given value
    or 0; ``mem`` and ``module`` are derived once."""
    assert not hasattr(isa.Insn, "__getattr__")
    config = load_config("osdi18")
    names = {name for kind in isa.OPCODES for name, _, _ in isa.field_table(kind, config)} - {"opcode"}
    assert names == set(isa._ALL_FIELDS)
    insn = isa.Insn("LOAD", memory_type=2, y_size=3)
    assert (insn.y_size, insn.x_size, insn.imm, insn.mem, insn.module) == (3, 0, 0, "inp", "load")
    assert isa.Insn("LOAD", memory_type=0).module == "compute" and isa.Insn("STORE", memory_type=4).module == "store"
    with pytest.raises(AttributeError):
        insn.not_a_field
    with pytest.raises(AttributeError, match="immutable"):
        insn.y_size = 4


def test_instructions_pickle_and_replace():
    import pickle

    insn = isa.Insn("GEMM", uop_end=5, iter_out=2, pop_prev=1)
    back = pickle.loads(pickle.dumps(insn))
    assert back == insn and back.fields == insn.fields and back.iter_out == 2 and back.module == "compute"
    assert insn.replace(iter_out=3).iter_out == 3 and insn.iter_out == 2


@pytest.mark.parametrize("preset", PRESET_NAMES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_program_decoder_equals_the_instruction_decoder(preset, data):
    config = load_config(preset)
    program = data.draw(st.lists(insns(config), max_size=20))
    raw = isa.encode_program(program, config)
    one_by_one = [isa.decode(raw[i:i + 16], config, i // 16) for i in range(0, len(raw), 16)]
    decoded = isa.decode_program(raw, config)
    assert decoded == one_by_one and [d.fields for d in decoded] == [d.fields for d in one_by_one]
    assert [(d.mem, d.module) for d in decoded] == [(d.mem, d.module) for d in one_by_one]


def test_program_decoder_names_the_first_bad_instruction():
    config = load_config("tiny")
    good = isa.encode(isa.Insn("FINISH"), config)
    bad_alu = bytearray(isa.encode(isa.Insn("ALU"), config))
    bad_opcode = bytes([7]) + bytes(15)
    with pytest.raises(EncodingError, match="instruction 1.*opcode") as first:
        isa.decode_program(good + bad_opcode + good, config)
    word = int.from_bytes(bad_alu, "little") | (7 << isa.layout("ALU", config)["alu_opcode"].lo)
    with pytest.raises(EncodingError, match="instruction 2 .*alu_opcode"):
        isa.decode_program(good + good + word.to_bytes(16, "little") + bad_opcode, config)
    assert "unknown opcode 7" in str(first.value)
