"""docs/spec.md is the project's own specification: its register table is the one vdla_hw.regmap
generates, its ALU table is vdla_hw.alu's, its encoding section follows the ISA's field table, its
module and token-queue tables are vdla_hw.isa's, every configuration parameter it names exists,
and the repository cites it instead of a spec outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from vdla_hw import alu, isa, regmap
from vdla_hw.config import PARAMETERS, load_config

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec.md"


def test_register_table_is_regmap():
    text = SPEC.read_text()
    table = text.split("<!-- regmap:begin -->\n", 1)[1].split("<!-- regmap:end -->", 1)[0].strip()
    assert table == regmap.markdown().strip(), "docs/spec.md section 8 differs from `vdla regmap`; paste its output"


def test_parameters_named_in_spec_exist():
    registers = {r.name for r in regmap.REGISTERS}
    names = set(re.findall(r"`((?:LOG|MEM|DDR|CMD|TOKEN|FETCH|QUEUE|GEMM|ALU|INSN|CLOCK)_[A-Z_]+)`", SPEC.read_text()))
    names -= registers
    assert names and names <= set(PARAMETERS), sorted(names - set(PARAMETERS))


def test_code_cites_the_spec_in_the_repository():
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.txt", "*.tcl"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    outside = re.compile(r"(?<![\w/])" + "SPEC" + r"\.md")  # built so this file does not match itself
    stale = [f for f in files if outside.search((ROOT / f).read_text())]
    assert not stale, f"cite docs/spec.md, not the shared spec outside the repository: {stale}"
    cited = {int(n) for f in files for n in re.findall(r"docs/spec\.md sections? (\d)", (ROOT / f).read_text())}
    headings = {int(n) for n in re.findall(r"^## (\d)\. ", SPEC.read_text(), re.M)}
    assert cited <= headings, sorted(cited - headings)


def test_differences_from_vta_cite_vta_files():
    """Section 9 lists every known difference from VTA, each with the VTA file it refers to
    (or the page that covers it), and the issue-25 items are all there."""
    text = SPEC.read_text().split("## 9. Differences from VTA", 1)[1]
    items = re.findall(r"^\* \*\*(.+?)\*\*(.*?)(?=^\* \*\*|\Z)", text, re.M | re.S)
    titles = [title for title, _ in items]
    for needed in ("accumulator-hazard", "DRAM addresses", "STORE after LOAD ACC", "OUT after a reset GEMM",
                   "MUL", "SHR amount", "FINISH and leftover tokens", "Memory type 5", "Padded WGT and UOP"):
        assert any(needed in t for t in titles), needed
    for title, body in items:
        if title.startswith(("The accumulator-hazard", "DRAM addresses", "Aligned with VTA")):
            assert "Section 5" in body or "docs/vta.md" in body or "section 4" in body, title
            continue
        assert re.search(r"[\w/]+\.(cc|h|scala|cl|tcl)\b", body), f"{title}: names no VTA source file"


def test_alu_table_is_the_alu_definition():
    text = SPEC.read_text()
    table = text.split("<!-- alu:begin -->\n", 1)[1].split("<!-- alu:end -->", 1)[0].strip()
    assert table == alu.markdown().strip(), "docs/spec.md section 4's ALU table differs from vdla_hw.alu.markdown()"


def _encoding_bullets() -> dict[str, str]:
    """Section 3's bullets: title (``Header``, ``LOAD / STORE``, ...) -> text."""
    text = SPEC.read_text().split("## 3. Instruction encoding", 1)[1].split("\n## 4.", 1)[0]
    return dict(re.findall(r"^\* \*\*(.+?)\*\*(.*?)(?=^\* \*\*|^\S|\Z)", text, re.M | re.S))


def test_encoding_section_is_the_field_table():
    """Section 3 names each kind's fields in field-table order with their fixed widths, and the
    opcode and memory-type numbers of the ISA (the ALU opcodes are section 4's table)."""
    config = load_config("tiny")
    bullets = _encoding_bullets()
    header = [name for name, _, _ in isa.field_table("FINISH", config)]
    for title, kinds in {"Header": ["FINISH"], "LOAD / STORE": ["LOAD", "STORE"], "GEMM": ["GEMM"],
                         "ALU": ["ALU"], "Micro-op": [None]}.items():
        body = bullets[title]
        for kind in kinds:
            table = isa.uop_table(config) if kind is None else isa.field_table(kind, config)
            if kind not in (None, "FINISH"):
                table = table[len(header):]
            widths = {name: width for name, width, _ in table}
            named = [n for n in re.findall(r"`(\w+)`", body) if n in widths]
            prefix = re.match(r"\s*:\s*the GEMM fields up to `(\w+)`", body)
            if prefix:  # "the GEMM fields up to X": those, then the ones named
                gemm = [n for n, _, _ in isa.field_table("GEMM", config)[len(header):]]
                named = gemm[:gemm.index(prefix.group(1)) + 1] + named[1:]
            assert named == list(widths), f"{title}: fields {named}, the table has {list(widths)}"
            for name, bits in re.findall(r"`(\w+)` (\d+)", body):
                assert widths[name] == int(bits), f"{title}: `{name}` {bits} bits, the table has {widths[name]}"
    numbers = dict(re.findall(r"([A-Z]+) (\d)", re.search(r"LOAD 0[^)]*", bullets["Header"]).group(0)))
    assert {k: int(v) for k, v in numbers.items()} == isa.OPCODES
    mems = dict(re.findall(r"([A-Z]+) (\d)", re.search(r"UOP 0[^)]*", bullets["LOAD / STORE"]).group(0)))
    assert {k.lower(): int(v) for k, v in mems.items()} == {m: i for i, m in enumerate(isa.MEM_TYPES)}


def test_topology_section_is_the_isa():
    """Section 1's module table, FIFO table and flag -> queue sentences are isa.MODULES,
    isa.TOKEN_ENDS and isa.FLAG_QUEUE."""
    text = SPEC.read_text().split("## 1. The accelerator", 1)[1].split("\n## 2.", 1)[0]
    assert tuple(re.findall(r"^\| \*\*(\w+)\*\* \|", text, re.M)) == isa.MODULES
    fifos = re.findall(r"^\| `(\w+)` \| (\w+) -> (\w+) \|", text, re.M)
    assert fifos == [(q, *ends) for q, ends in isa.TOKEN_ENDS.items()]
    load = re.search(r"Load may only use the \"next\" flags \(pop `(\w+)`, push `(\w+)`\)", text).groups()
    store = re.search(r"store only the \"prev\"\s+flags \(pop `(\w+)`, push `(\w+)`\)", text).groups()
    compute = dict(re.findall(r"`(\w+_\w+)` = `(\w+)`", text))
    said = {("load", "pop_next"): load[0], ("load", "push_next"): load[1],
            ("store", "pop_prev"): store[0], ("store", "push_prev"): store[1],
            **{("compute", flag): q for flag, q in compute.items()}}
    assert said == isa.FLAG_QUEUE


def test_encoding_words_are_the_layout():
    """Section 3's widths (instruction, word, micro-op) are the ISA's, and each kind's "second
    word:" begins at the first field the default preset's layout puts at or above bit 64."""
    config = load_config("osdi18")
    text = SPEC.read_text().split("## 3. Instruction encoding", 1)[1].split("\n## 4.", 1)[0]
    insn, word = re.search(r"Instructions are (\d+) bits, stored as two little-endian (\d+)-bit words", text).groups()
    assert (int(insn), int(word)) == (isa.INSN_BITS, isa.WORD_BITS) and 2 * isa.WORD_BITS == isa.INSN_BITS
    uop_bits = int(re.search(r"\*\*Micro-op\*\* \((\d+) bits", text).group(1))
    assert uop_bits == 8 * isa.encode_uops([(0, 0, 0)], config).dtype.itemsize
    bullets = _encoding_bullets()
    for title, kinds in {"LOAD / STORE": ["LOAD", "STORE"], "GEMM": ["GEMM"], "ALU": ["ALU"]}.items():
        second = re.search(r"second word(?: [^:]*)?: `(\w+)`", bullets[title]).group(1)
        for kind in kinds:
            first_high = next(f.name for f in isa.layout(kind, config).values() if f.lo >= isa.WORD_BITS)
            assert second == first_high, f"{title}: the second word begins at `{second}`, the layout at `{first_high}`"
