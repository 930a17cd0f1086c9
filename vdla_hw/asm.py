"""Text assembler and disassembler, derived from the ISA field table.

One instruction per line; ``#`` starts a comment. The text form of a field follows from the
table in ``vdla_hw.isa``: 1-bit fields (the four flags, ``reset``, ``use_imm``) are bare words;
``memory_type`` and ``alu_opcode`` are a name after the mnemonic; the other fields are
``key=value`` in the groups of :data:`GROUPS`. For example::

    LOAD inp sram=0 dram=64 y=2 x=4 stride=4 pad=0,0,1,1 push_next
    GEMM reset uop=0:4 iter=2x3 dst=1,0 src=0,0 wgt=0,0 pop_prev
    ALU shr uop=0:1 iter=1x4 dst=0,1 src=0,1 use_imm imm=3
    FINISH pop_next

Omitted groups default to 0, except ``y=1``, ``stride`` = ``x`` and ``iter=1x1``. ``imm=V`` alone
also sets ``use_imm``. Data directives place arrays and name them; a symbol name (optionally
``+N``/``-N``) may stand for any number:

    .config tiny                      # preset name or JSON file; must come first if present
    .data NAME MEM COUNT              # COUNT zeroed elements of MEM (uop/wgt/inp/acc/out)
    .data NAME MEM COUNT random SEED  # ... filled with seeded random values
    .data NAME MEM COUNT values V...  # ... filled with the given scalars (COUNT x element size)
    .uops NAME d,s,w d,s,w ...        # a micro-op table (dst_idx, src_idx, wgt_idx per uop)
"""

from __future__ import annotations

import re

import numpy as np

from vdla_hw import isa
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.config import MEM_TYPES, Config, load_config
from vdla_hw.errors import AsmError, EncodingError, VdlaError

# key -> (fields, separator): multi-field groups printed and parsed together.
GROUPS: dict[str, tuple[tuple[str, ...], str]] = {
    "sram": (("sram_base",), ""),
    "dram": (("dram_base",), ""),
    "y": (("y_size",), ""),
    "x": (("x_size",), ""),
    "stride": (("x_stride",), ""),
    "pad": (("y_pad_top", "y_pad_bottom", "x_pad_left", "x_pad_right"), ","),
    "uop": (("uop_bgn", "uop_end"), ":"),
    "iter": (("iter_out", "iter_in"), "x"),
    "dst": (("dst_factor_out", "dst_factor_in"), ","),
    "src": (("src_factor_out", "src_factor_in"), ","),
    "wgt": (("wgt_factor_out", "wgt_factor_in"), ","),
    "imm": (("imm",), ""),
}
ENUMS = {"memory_type": MEM_TYPES, "alu_opcode": isa.ALU_OPS}
DEFAULTS = {"y_size": 1, "iter_out": 1, "iter_in": 1}


def text_form(kind: str, config: Config) -> tuple[list[str], list[str], list[str]]:
    """(enum fields, group keys, bare words) of ``kind``, in field-table order."""
    names = [name for name, _, _ in isa.field_table(kind, config) if name != "opcode"]
    enums = [n for n in names if n in ENUMS]
    words = [n for n, width, _ in isa.field_table(kind, config) if width == 1 and n != "opcode"]
    keys = []
    for name in names:
        if name in enums or name in words:
            continue
        key = next(k for k, (fields, _) in GROUPS.items() if name in fields)
        if key not in keys:
            keys.append(key)
    return enums, keys, words


def check_groups_cover_table() -> None:
    """Every multi-bit, non-enum field of every kind belongs to exactly one text group."""
    config = load_config("tiny")
    for kind in isa.OPCODES:
        text_form(kind, config)  # raises StopIteration for an uncovered field


def format_insn(insn: isa.Insn, config: Config) -> str:
    """One line of assembly for ``insn`` (every group printed, so parsing it gives ``insn`` back)."""
    enums, keys, words = text_form(insn.kind, config)
    parts = [insn.kind] + [ENUMS[name][insn.fields.get(name, 0)] for name in enums]
    for key in keys:
        fields, sep = GROUPS[key]
        if key == "imm" and not insn.use_imm:
            continue
        parts.append(f"{key}=" + sep.join(str(insn.fields.get(f, 0)) for f in fields))
    order = [w for w in words if w not in isa.FLAGS] + [w for w in words if w in isa.FLAGS]
    parts += [w for w in order if insn.fields.get(w, 0)]
    return " ".join(parts)


class _Parser:
    def __init__(self, source: str, config: Config | None):
        self.source = source
        self.config = config
        self.builder: BundleBuilder | None = None

    def error(self, line: int, why: str) -> AsmError:
        return AsmError(self.source, line, why)

    def ensure_builder(self) -> BundleBuilder:
        if self.builder is None:
            self.builder = BundleBuilder(self.config or load_config(None))
        return self.builder

    def number(self, text: str, line: int) -> int:
        match = re.fullmatch(r"([A-Za-z_][\w.]*)?\s*([+-]?\s*(?:0x[0-9a-fA-F]+|\d+))?", text.strip())
        if not text.strip() or not match:
            raise self.error(line, f"expected a number or symbol[+N], got {text!r}")
        name, offset = match.groups()
        value = int(offset.replace(" ", ""), 0) if offset else 0
        if name:
            symbols = self.ensure_builder().symbols
            if name not in symbols:
                raise self.error(line, f"unknown symbol {name!r} (define it with .data or .uops first)")
            value += symbols[name].index
        return value

    def directive(self, words: list[str], line: int) -> None:
        name = words[0]
        if name == ".config":
            if self.builder is not None:
                raise self.error(line, ".config must come before any data or instruction")
            if len(words) != 2:
                raise self.error(line, ".config takes one preset name or JSON file")
            try:
                self.config = load_config(words[1])
            except VdlaError as err:
                raise self.error(line, str(err)) from None
        elif name == ".data":
            if len(words) < 4 or words[2] not in MEM_TYPES:
                raise self.error(line, f".data NAME MEM COUNT [random SEED | values ...], MEM one of {', '.join(MEM_TYPES)}")
            builder, mem = self.ensure_builder(), words[2]
            count = self.number(words[3], line)
            try:
                builder.check_count(words[1], mem, count)
            except VdlaError as err:
                raise self.error(line, str(err)) from None
            per = int(np.prod(builder.config.elem_shape(mem)))
            info = np.iinfo(np.dtype(builder.config.elem_dtype(mem)))
            try:
                if len(words) == 4:
                    builder.alloc(words[1], mem, count)
                elif words[4] == "random" and len(words) == 6:
                    seed = self.number(words[5], line)
                    if not 0 <= seed < 1 << 64:
                        raise self.error(line, f"random seed {seed} must be in 0..2**64-1")
                    rng = np.random.default_rng(seed)
                    low, high = (-128, 128) if info.bits == 8 else (-1000, 1000)
                    builder.array(words[1], mem, rng.integers(low, high, size=count * per))
                elif words[4] == "values":
                    values = [self.number(w, line) for w in words[5:]]
                    if len(values) != count * per:
                        raise self.error(line, f"{count} {mem} elements need {count * per} values, got {len(values)}")
                    builder.array(words[1], mem, values)
                else:
                    raise self.error(line, f"unknown .data initialiser {' '.join(words[4:])!r}")
            except AsmError:
                raise
            except VdlaError as err:
                raise self.error(line, str(err)) from None
        elif name == ".uops":
            if len(words) < 3:
                raise self.error(line, ".uops NAME d,s,w ... needs at least one micro-op")
            rows = []
            for word in words[2:]:
                parts = word.split(",")
                if len(parts) != 3:
                    raise self.error(line, f"micro-op {word!r} is not dst,src,wgt")
                rows.append([self.number(p, line) for p in parts])
            try:
                self.ensure_builder().uops(words[1], rows)
            except VdlaError as err:
                raise self.error(line, str(err)) from None
        else:
            raise self.error(line, f"unknown directive {name!r} (known: .config, .data, .uops)")

    def instruction(self, words: list[str], line: int) -> isa.Insn:
        kind = words[0].upper()
        if kind not in isa.OPCODES:
            raise self.error(line, f"unknown instruction {words[0]!r} (known: {', '.join(isa.OPCODES)})")
        config = self.ensure_builder().config
        enums, keys, bare = text_form(kind, config)
        fields: dict[str, int] = {}
        rest = words[1:]
        for name in enums:
            choices = ENUMS[name]
            if not rest or rest[0].lower() not in choices:
                got = repr(rest[0]) if rest else "nothing"
                raise self.error(line, f"{kind} needs a {name} ({', '.join(choices)}), got {got}")
            fields[name] = choices.index(rest.pop(0).lower())
        given: set[str] = set()  # fields set by a word of this line: each at most once
        for word in rest:
            if "=" not in word:
                if word not in bare:
                    raise self.error(line, f"{kind} has no flag {word!r} (flags: {', '.join(bare)})")
                if word in given:
                    raise self.error(line, f"{kind}: field {word} is given twice")
                given.add(word)
                fields[word] = 1
                continue
            key, value = word.split("=", 1)
            if key not in keys:
                raise self.error(line, f"{kind} has no operand {key!r} (operands: {', '.join(keys)})")
            group, sep = GROUPS[key]
            if key in given:
                raise self.error(line, f"{kind}: field {'/'.join(group)} is given twice ({key}= appears more than once)")
            given.add(key)
            parts = value.split(sep) if sep else [value]
            if len(parts) != len(group):
                shape = sep.join(f.split("_")[-1] for f in group) if sep else "N"
                raise self.error(line, f"{key}= takes {len(group)} value(s) as {key}={shape}, got {value!r}")
            for f, part in zip(group, parts):
                fields[f] = self.number(part, line)
            if key == "imm":
                fields["use_imm"] = 1
        for f, default in DEFAULTS.items():
            if f in isa.layout(kind, config) and f not in fields:
                fields[f] = default
        if "x_stride" in isa.layout(kind, config) and "x_stride" not in fields:
            fields["x_stride"] = fields.get("x_size", 0)
        insn = isa.Insn(kind, **fields)
        try:
            isa.encode(insn, config)
        except EncodingError as err:
            raise self.error(line, f"{kind}: field {err.field}: {err.why}") from None
        return insn


def assemble(text: str, config: str | Config | None = None, source: str = "<asm>") -> Bundle:
    """Assemble ``text`` into a bundle; AsmError names the file and line of any mistake.

    ``config`` applies unless the text has its own ``.config`` line.
    """
    parser = _Parser(source, load_config(config) if config is not None else None)
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if words[0].startswith("."):
            parser.directive(words, number)
        else:
            parser.ensure_builder().emit(parser.instruction(words, number))
    builder = parser.ensure_builder()
    if not builder.insns:
        raise AsmError(source, 0, "no instructions (a program ends with FINISH)")
    builder.meta = {"producer": "vdla asm", "source": source}
    return builder.build(add_finish=False)


def disassemble(bundle: Bundle) -> str:
    """The bundle as assembly text: a header of comments, then one instruction per line."""
    config = bundle.config
    lines = [f"# config {config.name} fingerprint {config.fingerprint}",
             f"# {bundle.insn_count} instructions at byte {bundle.insn_offset} of a {bundle.dram.size}-byte image"]
    for name, sym in bundle.symbols.items():
        lines.append(f"# symbol {name}: {sym.mem} elements {sym.index}..{sym.index + sym.count - 1}")
    for index, insn in enumerate(bundle.insns()):
        unused = "" if insn.use_imm or not insn.imm else f"  # unused imm bits {insn.imm}"
        lines.append(f"{format_insn(insn, config):<72} # {index}{unused}")
    return "\n".join(lines) + "\n"

