"""Assembler and disassembler: round trips on every preset, directives, line-numbered errors, and
``assemble(disassemble(b))`` writing the same bundle file as ``b`` (fixed programs, compiled layers,
random programs, arbitrary bundles, the ``vdla disasm | vdla asm -`` pipeline)."""

import csv
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from compiler.accel import compile_layer
from compiler.layers import Conv2D, Dense, LayerError
from tests.hw.programs import fixed_corpus
from tests.hw.strategies import PRESET_NAMES, insns
from vdla_hw import asm, disasm, isa
from vdla_hw.bundle import Bundle, Symbol
from vdla_hw.config import MEM_TYPES, Config, load_config
from vdla_hw.errors import AsmError, VdlaError
from vdla_sim.progen import random_program

CONFIGS = {name: load_config(name) for name in PRESET_NAMES}
ANNOTATED_MAX_IMAGE = 1 << 18   # bundles whose --annotate text is assembled again too (bytes of image)
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
    again = asm.assemble(disasm.disassemble(bundle), config=config)
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
    assert alu == isa.Insn("ALU", alu_opcode=isa.ALU_OPS.index("shr"), uop_end=1, iter_out=1, iter_in=4, dst_factor_in=1,
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


# --- disassembly reassembles to the same bundle file -----------------------------------------
def same_file(bundle: Bundle) -> str:
    """Disassemble ``bundle`` as read back from its file, assemble the text, and check the new
    bundle's file has the same bytes, with and without ``--annotate``'s comments; the text."""
    data = bundle.to_bytes()
    text = disasm.disassemble(Bundle.from_bytes(data, "original.npz"))
    again = asm.assemble(text, source="again.s")
    assert again.to_bytes() == data
    if bundle.dram.size <= ANNOTATED_MAX_IMAGE:  # the comments change nothing else: small images suffice
        annotated = disasm.disassemble(Bundle.from_bytes(data, "original.npz"), annotate=True)
        assert asm.assemble(annotated, source="annotated.s").to_bytes() == data
    return text


def test_bundle_files_are_deterministic():
    """The target is byte-identical files: the writer leaves no timestamp or other varying byte."""
    bundle = fixed_corpus("tiny")[0][1]
    assert bundle.to_bytes() == Bundle.from_bytes(bundle.to_bytes(), "b").to_bytes()


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_every_fixed_program_round_trips_byte_identical(preset):
    for name, bundle in fixed_corpus(preset):
        text = same_file(bundle)
        assert ".insn" not in text, name  # every instruction of them has its text form


@pytest.mark.parametrize("preset, layer, vthreads", [
    ("tiny", Conv2D(h=5, w=6, ic=5, oc=6, k=3, stride=1, pad=1, shift=4, relu=True), 1),
    ("tiny", Conv2D(h=3, w=3, ic=4, oc=4, k=1, pad=3, shift=3), 2),
    ("osdi18", Conv2D(h=4, w=5, ic=20, oc=17, k=3, stride=2, pad=1, shift=7), 2),
    ("vta-pynq", Conv2D(h=6, w=6, ic=32, oc=16, k=3, stride=1, pad=1, shift=8, relu=True), None),
    ("tiny", Dense(n=3, ic=17, oc=5, shift=4), 1),
    ("osdi18", Dense(n=1, ic=40, oc=35, shift=6, relu=True), 2),
    ("vta-pynq", Dense(name="fc", n=1, ic=512, oc=1000, shift=9), None),
], ids=lambda v: getattr(v, "name", str(v)))
def test_compiled_layers_round_trip_byte_identical(preset, layer, vthreads):
    text = same_file(compile_layer(layer, preset, vthreads=vthreads, store=False))
    assert ".uops " in text and "dram=out" in text  # micro-op tables and symbol labels, not numbers


@settings(max_examples=15, deadline=None)
@given(preset=st.sampled_from(PRESET_NAMES), h=st.integers(1, 8), w=st.integers(1, 8), k=st.sampled_from([1, 3]),
       stride=st.integers(1, 2), pad=st.integers(0, 2), ic=st.integers(1, 20), oc=st.integers(1, 20),
       vthreads=st.integers(1, 2), seed=st.integers(0, 9))
def test_compiled_conv_shapes_round_trip_byte_identical(preset, h, w, k, stride, pad, ic, oc, vthreads, seed):
    assume(h + 2 * pad >= k and w + 2 * pad >= k)
    layer = Conv2D(h=h, w=w, ic=ic, oc=oc, k=k, stride=stride, pad=pad, shift=5, relu=True)
    try:
        bundle = compile_layer(layer, preset, vthreads=vthreads, seed=seed, store=False)
    except LayerError:  # a shape this preset cannot hold
        return
    same_file(bundle)


def resnet18_convs():
    """(name, IC, OC, K, stride, pad) of ResNet-18's distinct convolutions."""
    text = resources.files("compiler").joinpath("data/resnet18_layers.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#"))
    seen = {}
    for r in rows:
        if r["name"] != "fc":
            seen.setdefault(tuple(int(r[k]) for k in ("IC", "OC", "K", "stride", "pad")), r["name"])
    return [(name, *key) for key, name in seen.items()]


@pytest.mark.parametrize("name, ic, oc, k, stride, pad", resnet18_convs(), ids=lambda v: str(v))
def test_resnet18_layers_round_trip_byte_identical(name, ic, oc, k, stride, pad):
    """Each distinct convolution on a small input (the 3-channel stem on 14x14, the others 7x7)."""
    size = 14 if ic == 3 else 7
    layer = Conv2D(name=name, h=size, w=size, ic=ic, oc=oc, k=k, stride=stride, pad=pad, shift=10, relu=True)
    same_file(compile_layer(layer, "vta-pynq", store=False))


def test_a_full_size_resnet18_layer_reads_as_hex_rows():
    """layer4.0.conv2 at its real 7x7 input (2.4 MB image, mostly weights): every 32 non-zero
    bytes one .bytes row, so the text stays under 3 bytes per image byte (6.1 MB measured) and
    every line but the one-line JSON of .meta is short."""
    layer = Conv2D(name="layer4.0.conv2", h=7, w=7, ic=512, oc=512, k=3, stride=1, pad=1, shift=10, relu=True)
    bundle = compile_layer(layer, "vta-pynq", store=False)
    text = same_file(bundle)
    assert len(text) < 3 * bundle.dram.size
    assert max(len(line) for line in text.splitlines() if not line.startswith(".meta")) < 120


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), preset=st.sampled_from(PRESET_NAMES))
def test_random_programs_round_trip_byte_identical(seed, preset):
    same_file(random_program(seed, preset))


def test_final_image_of_exec_round_trips():
    from vdla_hw.semantics import execute

    bundle = fixed_corpus("tiny")[1][1]
    same_file(bundle.with_dram(execute(bundle).dram))


# --- arbitrary bundles: every field the file holds ---------------------------------------------
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10)
NAMES = (st.from_regex(r"[A-Za-z_][\w.]{0,6}", fullmatch=True)
         | st.from_regex(r"[0-9$@%-][^\s#\\]{0,5}", fullmatch=True))


@st.composite
def bundles(draw):
    preset = draw(st.sampled_from(PRESET_NAMES))
    if draw(st.booleans()):
        config = load_config(preset)
    else:  # not a preset: its own name, or another accumulator depth
        smaller = load_config(preset).params["LOG_ACC_BUFF_SIZE"] - 1
        change = draw(st.sampled_from([{"name": "my # board"}, {"LOG_ACC_BUFF_SIZE": smaller}]))
        config = Config.from_json_text(json.dumps({"preset": preset, **change}))
    n_insn = draw(st.integers(1, 6))
    size = draw(st.integers(16 * n_insn, 4096))
    dram = np.zeros(size, dtype=np.uint8)
    for _ in range(draw(st.integers(0, 6))):  # stretches of random, constant or repeated bytes
        lo = draw(st.integers(0, size - 1))
        hi = draw(st.integers(lo, min(size, lo + 300)))
        kind = draw(st.sampled_from(["random", "constant", "pattern"]))
        rng = np.random.default_rng(draw(st.integers(0, 99)))
        if kind == "random":
            dram[lo:hi] = rng.integers(0, 256, hi - lo)
        elif kind == "constant":
            dram[lo:hi] = draw(st.integers(1, 255))
        else:
            dram[lo:hi] = np.resize(rng.integers(0, 256, 32), hi - lo)
    offset = 16 * draw(st.integers(0, (size - 16 * n_insn) // 16))
    for i in range(n_insn):  # text-form instructions or any 128-bit word (undecodable, stray bits)
        if draw(st.booleans()):
            word = isa.encode(draw(insns(config, canonical=draw(st.booleans()))), config)
        else:
            word = draw(st.integers(0, 2**128 - 1)).to_bytes(16, "little")
        dram[offset + 16 * i:offset + 16 * i + 16] = np.frombuffer(word, dtype=np.uint8)
    symbols = {}
    for name in draw(st.lists(NAMES, max_size=5, unique=True)):
        mem = draw(st.sampled_from(MEM_TYPES))
        per_bytes = config.elem_bytes(mem)
        if size < per_bytes:
            continue
        index = draw(st.integers(0, size // per_bytes - 1))
        count = draw(st.integers(0, size // per_bytes - index))
        values = count * int(np.prod(config.elem_shape(mem)))
        shape = draw(st.sampled_from([(count, *config.elem_shape(mem)), (values,), (1, values)]))
        if mem == "uop" and draw(st.booleans()):  # a micro-op table that decodes and encodes again
            lo = index * per_bytes
            rows = np.random.default_rng(index).integers(0, 4, (count, 3))
            dram[lo:lo + 4 * count] = np.frombuffer(isa.encode_uops(rows, config).astype("<u4").tobytes(), np.uint8)
        symbols[name] = Symbol(mem, index, count, shape)
    meta = draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4))
    return Bundle(dram=dram, insn_offset=offset, insn_count=n_insn, config=config, symbols=symbols, meta=meta)


@settings(max_examples=150, deadline=None)
@given(bundle=bundles())
def test_arbitrary_bundles_round_trip_byte_identical(bundle):
    same_file(bundle)


def test_zero_runs_are_left_out_and_repeated_rows_counted():
    config = load_config("tiny")
    dram = np.zeros(1 << 20, dtype=np.uint8)
    dram[4096:4096 + 32 * 1000] = np.resize(np.arange(32, dtype=np.uint8), 32 * 1000)
    dram[-16:] = np.frombuffer(isa.encode(isa.Insn("FINISH"), config), dtype=np.uint8)
    bundle = Bundle(dram=dram, insn_offset=dram.size - 16, insn_count=1, config=config,
                    symbols={"x": Symbol("inp", 0, 10000, (10000, 1, 4))})
    text = same_file(bundle)
    assert [line for line in text.splitlines() if line.startswith(".bytes")] == \
        [".bytes 0x001000 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f *1000"]


def test_a_symbol_name_the_text_cannot_hold_is_an_error():
    bundle = fixed_corpus("tiny")[0][1]
    bundle.symbols["two words"] = bundle.symbols.pop("src")
    with pytest.raises(VdlaError, match="'two words' cannot be written as assembly"):
        disasm.disassemble(bundle)


def test_raw_instruction_words_keep_stray_bits():
    config = load_config("tiny")
    alu = isa.Insn("ALU", alu_opcode=isa.ALU_OPS.index("add"), uop_end=1, iter_out=1, iter_in=1, imm=5)  # imm without use_imm
    bundle = asm.assemble(f".insn 0x{int.from_bytes(isa.encode(alu, config), 'little'):x}\n"
                          ".insn 0x7\nFINISH\n", config=config)
    text = same_file(bundle)
    assert "# 0  ALU add" in text and "undecodable: opcode: unknown opcode 7" in text


# --- the command line -----------------------------------------------------------------------------
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}


def vdla(*argv, stdin=None):
    return subprocess.run([sys.executable, "-m", "vdla", *map(str, argv)], input=stdin, capture_output=True,
                          env=ENV, check=True).stdout


def test_cli_disasm_pipe_asm_stdin_gives_the_same_file_and_run(tmp_path):
    original = tmp_path / "b.npz"
    vdla("compile", "conv2d", "--h", 4, "--w", 4, "--ic", 8, "--oc", 8, "--k", 3, "--pad", 1, "--shift", 6,
         "--relu", "--config", "tiny", "-o", original)
    copy = tmp_path / "c.npz"
    script = f"{sys.executable} -m vdla disasm {original} | {sys.executable} -m vdla asm - -o {copy}"
    subprocess.run(["bash", "-o", "pipefail", "-c", script], check=True, env=ENV, capture_output=True)
    assert copy.read_bytes() == original.read_bytes()
    assert vdla("exec", copy, "--json") == vdla("exec", original, "--json")
    assert vdla("disasm", "-", stdin=original.read_bytes()) == vdla("disasm", original)


def test_cli_disasm_of_an_assembled_bundle(tmp_path):
    source = tmp_path / "va.s"
    source.write_text((Path(__file__).parents[2] / "examples" / "vector_add.s").read_text())
    bundle = tmp_path / "va.npz"
    vdla("asm", source, "-o", bundle)
    text = vdla("disasm", bundle).decode()
    assert f'.meta {{"producer": "vdla asm", "source": "{source}"}}' in text and ".uops add at=" in text
    again = tmp_path / "again.s"
    again.write_text(text)
    vdla("asm", again, "-o", tmp_path / "again.npz")
    assert (tmp_path / "again.npz").read_bytes() == bundle.read_bytes()


@pytest.mark.parametrize("text,line,words", [
    (".data a inp 2 at=-1\nFINISH\n", 1, "at=-1: an element index must not be negative"),
    (".data a inp 2 shape=3,4\nFINISH\n", 1, "shape 3,4 does not hold 2 inp elements"),
    (".data a inp 2\n.data a inp 1\nFINISH\n", 2, "symbol 'a' is defined twice (first on line 1)"),
    (".bytes 0x10 abc\nFINISH\n", 1, "is not an even number of hex digits"),
    (".bytes 0x10 ab *0\nFINISH\n", 1, "is not a repeat count"),
    (".text 16\n.bytes 0x18 ab\nFINISH\nFINISH\n", 2, "overlap the instruction stream"),
    (".image 32\nFINISH\nFINISH\nFINISH\n", 1, ".image 32: the instructions end at byte 48"),
    (".image 64\n.data a acc 8\nFINISH\n", 2, "symbol 'a' ends at byte 128, past the 64-byte image"),
    ("FINISH\n.text 0\n", 2, ".text must come before the first instruction"),
    (".text 8\nFINISH\n", 1, ".text 8 is not a multiple of 16"),
    (".meta {}\n.meta {}\nFINISH\n", 2, ".meta is given twice (first on line 1)"),
    (".meta {\"a\": }\nFINISH\n", 1, ".meta: not JSON"),
    (".meta [1]\nFINISH\n", 1, ".meta takes a JSON object"),
    (".meta {} trailing\nFINISH\n", 1, "text after the JSON object"),
    (".config {\"preset\": \"nope\"}\nFINISH\n", 1, "unknown preset"),
    ("FINISH\n.config {\"preset\": \"tiny\"}\n", 2, ".config must come before"),
    (".insn 0xzz\n", 1, "is not a hexadecimal number"),
    (".insn 0x1" + "0" * 32 + "\n", 1, "does not fit 128 bits"),
    (".uops k at=0\nFINISH\n", 1, "needs at least one micro-op"),
    ("LOAD inp sram=0 \\\n  x=1 bogus\nFINISH\n", 1, "LOAD has no flag 'bogus'"),
    ("FINISH\nLOAD inp x=1 \\\n", 2, "the text ends inside a line continued with \\"),
])
def test_errors_of_the_layout_directives_name_the_line(text, line, words):
    with pytest.raises(AsmError) as err:
        asm.assemble(text, config="tiny", source="prog.s")
    assert str(err.value).startswith(f"prog.s:{line}: ") and words in str(err.value), str(err.value)


def test_layout_directives_place_what_they_say():
    text = (".config {\"preset\": \"tiny\", \"name\": \"mine # not a comment\"}  # a comment\n"
            ".image 1024\n.meta {\"k\": \"#1\"}\n"
            ".data w wgt 2 at=3 shape=2,16 values " + " ".join(["1"] * 32) + "\n"
            ".uops k at=200 shape=2 \\\n  1,2,0 \\\n  3,4,0\n"
            ".bytes 0x300 ff *2\n.text 512\nLOAD wgt dram=w+1 x=1\nFINISH\n")
    bundle = asm.assemble(text)
    assert bundle.config.name == "mine # not a comment" and bundle.meta == {"k": "#1"}
    assert bundle.dram.size == 1024 and bundle.insn_offset == 512
    assert bundle.symbols["w"] == Symbol("wgt", 3, 2, (2, 16)) and bundle.symbols["k"] == Symbol("uop", 200, 2, (2,))
    assert bundle.dram[48:80].tolist() == [1] * 32 and bundle.dram[0x300:0x303].tolist() == [255, 255, 0]
    assert isa.decode_uops(bundle.read("k"), bundle.config).tolist() == [[1, 2, 0], [3, 4, 0]]
    assert bundle.insns()[0].dram_base == 4
    same_file(bundle)


def test_a_micro_op_word_with_bits_outside_its_fields_is_kept_as_bytes():
    """tiny's micro-op fields fill 18 of 32 bits: a table with bit 31 set is .data and .bytes."""
    config = load_config("tiny")
    bundle = asm.assemble(".uops k 1,2,3 4,5,6\nFINISH\n", config=config)
    dram = bundle.dram.copy()
    dram[3] |= 0x80
    odd = bundle.with_dram(dram)
    text = same_file(odd)
    assert ".uops" not in text and ".data k uop 2 at=0" in text
    assert ".uops k at=0 1,2,3 4,5,6" in same_file(bundle)
