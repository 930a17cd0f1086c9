"""Fuzzing the text inputs: assembly (grammar-shaped lines with any numbers, and noise) and JSON
configurations (any parameters, types and values). Each ends in a clean error or a result that
round-trips: assembled programs disassemble to text that assembles to the same bundle file,
accepted configurations survive to_json/load_config with the same fingerprint."""

import json

from hypothesis import event, given, strategies as st

from tests.fuzz.harness import FUZZ, outcome
from vdla_hw.asm import assemble
from vdla_hw.disasm import disassemble
from vdla_hw.config import PARAMETERS, load_config
from vdla_hw.presets import PRESETS

NUMBER = st.one_of(st.integers(-3, 70), st.integers(-(1 << 40), 1 << 40), st.sampled_from(["0x10", "-0x1", "k", "k+1",
                                                                                           "a-2", "zz", ""]))
MNEMONICS = ["LOAD", "STORE", "GEMM", "ALU", "FINISH", "load", "NOP"]
WORDS = ["uop", "wgt", "inp", "acc", "out", "min", "max", "add", "shr", "mul", "reset", "use_imm", "pop_prev",
         "pop_next", "push_prev", "push_next", "bogus"]
KEYS = ["sram", "dram", "y", "x", "stride", "pad", "uop", "iter", "dst", "src", "wgt", "imm", "what"]


@st.composite
def asm_line(draw):
    kind = draw(st.sampled_from(["insn", "insn", "insn", "data", "uops", "config", "layout", "noise", "comment"]))
    if kind == "insn":
        parts = [draw(st.sampled_from(MNEMONICS))] + draw(st.lists(st.sampled_from(WORDS), max_size=3))
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=5)):
            sep = draw(st.sampled_from([",", "x", ":", ""]))
            values = [str(draw(NUMBER)) for _ in range(draw(st.integers(1, 4)))]
            parts.append(f"{key}={sep.join(values)}")
        return " ".join(parts)
    if kind == "data":
        mem = draw(st.sampled_from(["uop", "wgt", "inp", "acc", "out", "xyz"]))
        init = draw(st.sampled_from(["", "random 1", f"random {draw(NUMBER)}", "values 1 2 3 4", "values", "zeros"]))
        return f".data {draw(st.sampled_from(['a', 'k', 'a']))} {mem} {draw(NUMBER)} {init}"
    if kind == "uops":
        rows = [",".join(str(draw(NUMBER)) for _ in range(draw(st.integers(2, 4)))) for _ in range(draw(st.integers(0, 3)))]
        return f".uops k {' '.join(rows)}"
    if kind == "layout":  # the directives vdla disasm writes, with any numbers
        hexes = st.sampled_from(["00ff", "abc", "", "1" * 64])
        metas = st.sampled_from(["{}", '{"a": [1, 2.5]}', "[]", "{", "{} x"])
        shapes = st.sampled_from(["", "2,4", "8", "-1", "q"])
        return draw(st.sampled_from([
            f".bytes {draw(NUMBER)} {draw(hexes)} {draw(st.sampled_from(['', '*3', '*0', 'x']))}",
            f".image {draw(NUMBER)}", f".text {draw(NUMBER)}", f".insn 0x{draw(st.integers(0, 1 << 130)):x}",
            ".meta " + draw(metas), f".data a inp 2 at={draw(NUMBER)} shape={draw(shapes)}",
            f".uops k at={draw(NUMBER)} 0,1,0 \\", '.config {"preset": "tiny", "name": "x # y"}']))
    if kind == "config":
        return f".config {draw(st.sampled_from(['tiny', 'osdi18', 'nope', '{bad json', '/dev/null']))}"
    if kind == "comment":
        return "# " + draw(st.text(max_size=20))
    return draw(st.text(max_size=40))


@FUZZ
@given(st.lists(asm_line(), max_size=12))
def test_assembly(lines):
    text = ".config tiny\n" + "\n".join(lines) + "\nFINISH\n"
    kind, bundle = outcome(assemble, text, source="fuzz.s", seconds=10)
    event(f"assembled: {kind}")
    if kind == "ok":
        again = assemble(disassemble(bundle), source="again.s")
        assert again.to_bytes() == bundle.to_bytes()


VALUE = st.one_of(st.integers(-(1 << 70), 1 << 70), st.integers(-2, 40), st.floats(allow_nan=True), st.none(),
                  st.text(max_size=10), st.booleans(), st.lists(st.integers(), max_size=2),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@FUZZ
@given(preset=st.one_of(st.sampled_from(sorted(PRESETS)), st.none(), st.text(max_size=8), st.integers()),
       params=st.dictionaries(st.one_of(st.sampled_from(sorted(PARAMETERS)), st.text(max_size=12)), VALUE,
                              max_size=4))
def test_json_configurations(preset, params):
    data = dict(params)
    if preset is not None:
        data["preset"] = preset
    kind, config = outcome(load_config, json.dumps(data))
    event(f"configuration: {kind}")
    if kind == "ok":
        assert load_config(config.to_json()).fingerprint == config.fingerprint
        assert config.describe()["derived"]


@FUZZ
@given(st.one_of(st.text(max_size=60).map(lambda t: "{" + t), st.sampled_from(['{"preset": []}', "{}", "{" * 5000,
                                                                               '{"preset": "tiny"} trailing'])))
def test_json_configuration_text(text):
    outcome(load_config, text)


def test_a_large_random_symbol_costs_about_its_size_not_eight_times():
    """Found by the fuzzer: `.data a inp 19170749 random 0` (a 77 MB symbol on tiny) peaked at
    767 MB, its values drawn as one int64 array and copied twice; now they are drawn in chunks
    straight into the symbol's bytes."""
    kind, bundle = outcome(assemble, ".config tiny\n.data a inp 19170749 random 0\nFINISH\n", source="fuzz.s",
                           seconds=30)
    assert kind == "ok" and bundle.dram.nbytes > 19170749 * 4
