"""Text assembler, derived from the ISA field table (its inverse: :mod:`vdla_hw.disasm`).

One instruction per line; ``#`` starts a comment; a line ending with ``\\`` continues on the next.
The text form of a field follows from the table in ``vdla_hw.isa``: 1-bit fields (the four
flags, ``reset``, ``use_imm``) are bare words; ``memory_type`` and ``alu_opcode`` are a name after
the mnemonic; the other fields are ``key=value`` in the groups of :data:`GROUPS`. For example::

    LOAD inp sram=0 dram=64 y=2 x=4 stride=4 pad=0,0,1,1 push_next
    GEMM reset uop=0:4 iter=2x3 dst=1,0 src=0,0 wgt=0,0 pop_prev
    ALU shr uop=0:1 iter=1x4 dst=0,1 src=0,1 use_imm imm=3
    FINISH pop_next

Omitted groups default to 0, except ``y=1``, ``stride`` = ``x`` and ``iter=1x1``. ``imm=V`` alone
also sets ``use_imm``. Data directives place arrays and name them; a symbol name (optionally
``+N``/``-N``) may stand for any number (the symbol's element index)::

    .config tiny                      # preset, JSON file or inline JSON; before any data or instruction
    .data NAME MEM COUNT              # COUNT zeroed elements of MEM (uop/wgt/inp/acc/out)
    .data NAME MEM COUNT random SEED  # ... filled with seeded random values
    .data NAME MEM COUNT values V...  # ... filled with the given scalars (COUNT x element size)
    .uops NAME d,s,w d,s,w ...        # a micro-op table (dst_idx, src_idx, wgt_idx per uop)

``.data`` and ``.uops`` take ``at=INDEX`` (the element index, instead of the next free aligned
one) and ``shape=D,D,...`` (the symbol's shape, default ``COUNT`` x element shape) after the
count (``.uops``: after the name). What the disassembler adds to write any bundle exactly::

    .image BYTES                      # the DRAM image's size (default: just past the instructions)
    .meta {JSON}                      # the bundle's meta object (default: producer vdla asm)
    .bytes OFFSET HEX [*N]            # raw bytes at byte OFFSET (the row repeated N times)
    .text OFFSET                      # the instruction stream's byte offset (before any instruction)
    .insn 0xHEX                       # one raw instruction: its 128-bit little-endian word

Bytes nobody writes are zero. :func:`vdla_hw.disasm.disassemble` prints every field of a bundle (configuration,
image size, meta, symbols in their order, every non-zero byte, the instruction stream), so
``assemble(disassemble(b)).to_bytes() == b.to_bytes()`` for every bundle whose symbol names are
words (docs/asm.md describes the format).
"""

from __future__ import annotations

import json
import re

import numpy as np

from vdla_hw import isa
from vdla_hw.bundle import ALIGN, Bundle, Symbol
from vdla_hw.config import MEM_TYPES, Config, load_config
from vdla_hw.errors import AsmError, EncodingError, VdlaError
from vdla_hw.limits import MAX_DRAM_BYTES, mib

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


SYMBOL = re.compile(r"[A-Za-z_][\w.]*")      # a name that may stand for a number
NAME = re.compile(r"[^\s#\\]+")              # a symbol name a directive can hold
JSON_DIRECTIVES = (".config", ".meta")       # take a JSON object: the rest of the line
USAGE = {
    ".data": ".data NAME MEM COUNT [at=INDEX] [shape=D,...] [random SEED | values V...], MEM one of "
             + ", ".join(MEM_TYPES),
    ".uops": ".uops NAME [at=INDEX] [shape=D,...] d,s,w ...",
    ".bytes": ".bytes OFFSET HEX [*N]",
    ".image": ".image BYTES",
    ".text": ".text OFFSET",
    ".insn": ".insn 0xHEX (the 128-bit instruction word)",
}
DIRECTIVES = (".config", ".data", ".uops", ".bytes", ".image", ".meta", ".text", ".insn")


class _Parser:
    """The state of one assembly: symbols, byte writes and the instruction stream."""

    def __init__(self, source: str, config: Config | None):
        self.source = source
        self.config = config
        self.started = False                             # data or an instruction seen
        self.symbols: dict[str, Symbol] = {}
        self.defined: dict[str, int] = {}                # symbol -> its line
        self.writes: list[tuple[int, bytes, int]] = []   # (byte offset, bytes or a uint8 array, line), in text order
        self.cursor = 0                                  # end of the data placed so far (bytes)
        self.stream: list[bytes] = []                    # encoded instructions
        self.once: dict[str, tuple[object, int]] = {}    # .image/.text/.meta -> (value, line)

    def error(self, line: int, why: str) -> AsmError:
        return AsmError(self.source, line, why)

    def start(self) -> Config:
        """The configuration, fixed from now on (data or an instruction follows)."""
        if self.config is None:
            self.config = load_config(None)
        self.started = True
        return self.config

    def number(self, text: str, line: int) -> int:
        match = re.fullmatch(rf"({SYMBOL.pattern})?\s*([+-]?\s*(?:0x[0-9a-fA-F]+|\d+))?", text.strip())
        if not text.strip() or not match:
            raise self.error(line, f"expected a number or symbol[+N], got {text!r}")
        name, offset = match.groups()
        try:
            value = int(offset.replace(" ", ""), 0) if offset else 0
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise self.error(line, f"number {text[:20]!r}... has too many digits") from None
        if name:
            if name not in self.symbols:
                raise self.error(line, f"unknown symbol {name!r} (define it with .data or .uops first)")
            value += self.symbols[name].index
        return value

    # --- data -----------------------------------------------------------------------------
    def options(self, words: list[str], line: int) -> tuple[int | None, tuple[int, ...] | None, list[str]]:
        """(at, shape, the words after them) of a .data/.uops line's leading at=/shape= words."""
        at = shape = None
        while words and words[0].split("=", 1)[0] in ("at", "shape") and "=" in words[0]:
            key, value = words.pop(0).split("=", 1)
            if (at if key == "at" else shape) is not None:
                raise self.error(line, f"{key}= is given twice")
            if key == "at":
                at = self.number(value, line)
                if at < 0:
                    raise self.error(line, f"at={at}: an element index must not be negative")
            else:
                try:
                    shape = tuple(int(d) for d in value.split(",")) if value else ()
                except ValueError:
                    raise self.error(line, f"shape={value!r} is not comma-separated sizes") from None
                if any(d < 0 for d in shape):
                    raise self.error(line, f"shape={value}: a size is negative")
        return at, shape, words

    def check_count(self, name: str, mem: str, count: int, line: int, at: int | None) -> None:
        """Before anything is allocated: ``count`` elements of ``mem`` fit the DRAM limit."""
        if count < 0:
            raise self.error(line, f"symbol {name!r}: element count {count} is negative")
        size = self.start().elem_bytes(mem)
        end = (self.cursor if at is None else at * size) + count * size
        if end > MAX_DRAM_BYTES:
            raise self.error(line, f"symbol {name!r}: {count} {mem} elements would grow the DRAM image to "
                             f"{mib(end)}, past the {mib(MAX_DRAM_BYTES)} limit (vdla_hw/limits.py)")

    def place(self, name: str, mem: str, count: int, line: int, at: int | None,
              shape: tuple[int, ...] | None, payload: bytes | None) -> None:
        """Define symbol ``name`` (at element ``at``, or the next free one aligned as
        :class:`vdla_hw.bundle.BundleBuilder` aligns) and record its bytes."""
        config = self.start()
        if name in self.symbols:
            raise self.error(line, f"symbol {name!r} is defined twice (first on line {self.defined[name]})")
        size = config.elem_bytes(mem)
        if at is None:
            align = max(size, ALIGN)
            start = -(-self.cursor // align) * align
        else:
            start = at * size
        end = start + count * size
        if end > MAX_DRAM_BYTES:
            raise self.error(line, f"symbol {name!r}: {count} {mem} elements would grow the DRAM image to "
                             f"{mib(end)}, past the {mib(MAX_DRAM_BYTES)} limit (vdla_hw/limits.py)")
        per = int(np.prod(config.elem_shape(mem)))
        if shape is None:
            shape = (count, *config.elem_shape(mem))
        elif int(np.prod(shape, dtype=object)) != count * per:
            raise self.error(line, f"symbol {name!r}: shape {','.join(map(str, shape))} does not hold {count} "
                             f"{mem} elements of {per} values")
        self.cursor = max(self.cursor, end)
        self.symbols[name] = Symbol(mem, start // size, count, tuple(shape))
        self.defined[name] = line
        if payload is not None:
            self.writes.append((start, payload, line))

    def data(self, words: list[str], line: int) -> None:
        if len(words) < 4 or words[2] not in MEM_TYPES:
            raise self.error(line, USAGE[".data"])
        config = self.start()
        name, mem = words[1], words[2]
        count = self.number(words[3], line)
        at, shape, rest = self.options(words[4:], line)
        self.check_count(name, mem, count, line, at)
        per = int(np.prod(config.elem_shape(mem)))
        dtype = np.dtype(config.elem_dtype(mem))
        info = np.iinfo(dtype)
        if not rest:
            payload = None
        else:
            if rest[0] == "random" and len(rest) == 2:
                seed = self.number(rest[1], line)
                if not 0 <= seed < 1 << 64:
                    raise self.error(line, f"random seed {seed} must be in 0..2**64-1")
                self.place(name, mem, count, line, at, shape, random_payload(seed, count * per, dtype))
                return
            if rest[0] == "values":
                values = [self.number(w, line) for w in rest[1:]]
                if len(values) != count * per:
                    raise self.error(line, f"{count} {mem} elements need {count * per} values, got {len(values)}")
            else:
                raise self.error(line, f"unknown .data initialiser {' '.join(rest)!r} (random SEED or values V...)")
            arr = np.asarray(values, dtype=object if not isinstance(values, np.ndarray) else None)
            if arr.size and (arr.min() < info.min or arr.max() > info.max):
                raise self.error(line, f"symbol {name!r}: values outside {dtype.name} range for {mem}")
            payload = np.asarray(values, dtype=np.int64).astype(dtype).tobytes()
        self.place(name, mem, count, line, at, shape, payload)

    def uops(self, words: list[str], line: int) -> None:
        if len(words) < 2:
            raise self.error(line, USAGE[".uops"])
        config = self.start()
        at, shape, rest = self.options(words[2:], line)
        if not rest:
            raise self.error(line, ".uops NAME d,s,w ... needs at least one micro-op")
        rows = []
        for word in rest:
            parts = word.split(",")
            if len(parts) != 3:
                raise self.error(line, f"micro-op {word!r} is not dst,src,wgt")
            rows.append([self.number(p, line) for p in parts])
        try:
            table = isa.encode_uops(rows, config)
        except VdlaError as err:
            raise self.error(line, str(err)) from None
        self.place(words[1], "uop", len(table), line, at, shape, table.astype("<u4").tobytes())

    def raw_bytes(self, words: list[str], line: int) -> None:
        if len(words) not in (3, 4):
            raise self.error(line, USAGE[".bytes"])
        self.start()
        offset = self.number(words[1], line)
        if offset < 0:
            raise self.error(line, f".bytes offset {offset} is negative")
        try:
            data = bytes.fromhex(words[2])
        except ValueError:
            raise self.error(line, f".bytes: {words[2][:40]!r} is not an even number of hex digits") from None
        repeat = 1
        if len(words) == 4:
            match = re.fullmatch(r"\*(\d+)", words[3])
            if not match or int(match.group(1)) < 1:
                raise self.error(line, f".bytes: {words[3]!r} is not a repeat count *N (N >= 1)")
            repeat = int(match.group(1))
        end = offset + len(data) * repeat
        if end > MAX_DRAM_BYTES:
            raise self.error(line, f".bytes end at byte {end}, past the {mib(MAX_DRAM_BYTES)} DRAM limit "
                             "(vdla_hw/limits.py)")
        self.writes.append((offset, data * repeat, line))
        self.cursor = max(self.cursor, end)

    def insn_word(self, words: list[str], line: int) -> None:
        if len(words) != 2:
            raise self.error(line, USAGE[".insn"])
        self.start()
        try:
            value = int(words[1], 16 if not words[1].lower().startswith("0x") else 0)
        except ValueError:
            raise self.error(line, f".insn: {words[1]!r} is not a hexadecimal number") from None
        if not 0 <= value < 1 << isa.INSN_BITS:
            raise self.error(line, f".insn: {words[1]} does not fit {isa.INSN_BITS} bits")
        self.stream.append(value.to_bytes(isa.INSN_BITS // 8, "little"))

    # --- lines ----------------------------------------------------------------------------
    def once_only(self, name: str, value, line: int) -> None:
        if name in self.once:
            raise self.error(line, f"{name} is given twice (first on line {self.once[name][1]})")
        self.once[name] = (value, line)

    def json_directive(self, name: str, text: str, line: int) -> None:
        """``.config {...}`` or ``.meta {...}``: one JSON object, then at most a comment."""
        try:
            value, end = json.JSONDecoder().raw_decode(text)
        except json.JSONDecodeError as err:
            raise self.error(line, f"{name}: not JSON ({err.msg} at column {err.colno})") from None
        except (ValueError, RecursionError) as err:  # an integer of thousands of digits, deep nesting
            raise self.error(line, f"{name}: JSON not accepted ({str(err)[:80] or type(err).__name__})") from None
        tail = text[end:].strip()
        if tail and not tail.startswith("#"):
            raise self.error(line, f"{name}: text after the JSON object: {tail[:40]!r}")
        if not isinstance(value, dict):
            raise self.error(line, f"{name} takes a JSON object")
        if name == ".meta":
            self.once_only(name, value, line)
        else:
            self.set_config(text[:end], line)

    def set_config(self, spec: str, line: int) -> None:
        if self.started:
            raise self.error(line, ".config must come before any data or instruction")
        try:
            self.config = load_config(spec)
        except VdlaError as err:
            raise self.error(line, str(err)) from None

    def directive(self, words: list[str], line: int) -> None:
        name = words[0]
        if name == ".config":
            if len(words) != 2:
                raise self.error(line, ".config takes one preset name, JSON file or JSON object")
            self.set_config(words[1], line)
        elif name == ".data":
            self.data(words, line)
        elif name == ".uops":
            self.uops(words, line)
        elif name == ".bytes":
            self.raw_bytes(words, line)
        elif name == ".insn":
            self.insn_word(words, line)
        elif name in (".image", ".text"):
            if len(words) != 2:
                raise self.error(line, USAGE[name])
            value = self.number(words[1], line)
            if not 0 <= value <= MAX_DRAM_BYTES:
                raise self.error(line, f"{name} {value} is outside 0..{MAX_DRAM_BYTES} (vdla_hw/limits.py)")
            if name == ".text":
                if self.stream:
                    raise self.error(line, ".text must come before the first instruction")
                if value % (isa.INSN_BITS // 8):
                    raise self.error(line, f".text {value} is not a multiple of {isa.INSN_BITS // 8}")
            self.once_only(name, value, line)
        elif name == ".meta":
            raise self.error(line, ".meta takes a JSON object on its line")
        else:
            raise self.error(line, f"unknown directive {name!r} (known: {', '.join(DIRECTIVES)})")

    def instruction(self, words: list[str], line: int) -> tuple[isa.Insn, bytes]:
        kind = words[0].upper()
        if kind not in isa.OPCODES:
            raise self.error(line, f"unknown instruction {words[0]!r} (known: {', '.join(isa.OPCODES)})")
        config = self.start()
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
            word = isa.encode(insn, config)
        except EncodingError as err:
            raise self.error(line, f"{kind}: field {err.field}: {err.why}") from None
        return insn, word

    def build(self) -> Bundle:
        """The bundle: writes in text order, then the instruction stream over them."""
        if not self.stream:
            raise AsmError(self.source, 0, "no instructions (a program ends with FINISH)")
        config = self.start()
        stream = b"".join(self.stream)
        text, text_line = self.once.get(".text", (None, 0))
        offset = -(-self.cursor // ALIGN) * ALIGN if text is None else text
        end = offset + len(stream)
        size = max(end, self.cursor)
        if ".image" in self.once:
            size, image_line = self.once[".image"]
            for name, sym in self.symbols.items():
                if sym.byte_range(config)[1] > size:
                    raise self.error(self.defined[name], f"symbol {name!r} ends at byte "
                                     f"{sym.byte_range(config)[1]}, past the {size}-byte image (.image)")
            for start, data, line in self.writes:
                if start + len(data) > size:
                    raise self.error(line, f"bytes {start}..{start + len(data) - 1} lie past the {size}-byte "
                                     "image (.image)")
            if end > size:
                raise self.error(image_line, f".image {size}: the instructions end at byte {end}")
        if end > MAX_DRAM_BYTES:
            raise self.error(text_line, f"the instructions end at byte {end}, past the {mib(MAX_DRAM_BYTES)} "
                             "DRAM limit (vdla_hw/limits.py)")
        dram = np.zeros(size, dtype=np.uint8)
        for start, data, line in self.writes:
            if start < end and start + len(data) > offset:
                raise self.error(line, f"bytes {start}..{start + len(data) - 1} overlap the instruction stream "
                                 f"(bytes {offset}..{end - 1}; move it with .text)")
            dram[start:start + len(data)] = np.frombuffer(data, dtype=np.uint8)
        dram[offset:end] = np.frombuffer(stream, dtype=np.uint8)
        meta = self.once[".meta"][0] if ".meta" in self.once else {"producer": "vdla asm", "source": self.source}
        try:
            return Bundle(dram=dram, insn_offset=offset, insn_count=len(self.stream), config=config,
                          symbols=dict(self.symbols), meta=meta)
        except VdlaError as err:
            raise AsmError(self.source, 0, str(err)) from None


RANDOM_CHUNK = 1 << 20  # values drawn at a time by .data ... random (bounds its int64 scratch to 8 MiB)


def random_payload(seed: int, count: int, dtype: np.dtype) -> np.ndarray:
    """The bytes (a uint8 array) of ``count`` seeded random values of ``dtype``: int8 in
    [-128, 127], wider types in [-1000, 999]. Drawn in chunks straight into the result, so a
    128 MiB symbol needs 128 MiB, not eight times that as one int64 array; the values are the
    same as one ``integers(low, high, size=count)`` call of the seed's generator."""
    low, high = (-128, 128) if dtype.itemsize == 1 else (-1000, 1000)
    out = np.empty(count, dtype=dtype)
    rng = np.random.default_rng(seed)
    for start in range(0, count, RANDOM_CHUNK):
        out[start:start + RANDOM_CHUNK] = rng.integers(low, high, size=min(RANDOM_CHUNK, count - start))
    return out.view(np.uint8)


def assemble(text: str, config: str | Config | None = None, source: str = "<asm>") -> Bundle:
    """Assemble ``text`` into a bundle; AsmError names the file and line of any mistake.

    ``config`` applies unless the text has its own ``.config`` line.
    """
    parser = _Parser(source, load_config(config) if config is not None else None)
    pending: list[str] = []  # words of a statement continued with \ so far
    first, more = 0, False
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            first = number
            head = raw.split(None, 1)
            if len(head) == 2 and head[0] in JSON_DIRECTIVES and head[1].startswith("{"):
                parser.json_directive(head[0], head[1], number)
                more = False
                continue
        body = raw.split("#", 1)[0].rstrip()
        more = body.endswith("\\")
        pending += (body[:-1] if more else body).split()
        if more:
            continue
        words, pending = pending, []
        if not words:
            continue
        if words[0].startswith("."):
            parser.directive(words, first)
        else:
            parser.stream.append(parser.instruction(words, first)[1])
    if more:
        raise AsmError(source, first, "the text ends inside a line continued with \\")
    return parser.build()


def assemble_insn(line: str, config: Config) -> bytes:
    """The 16 bytes of one instruction line (AsmError, line 0, unless it is one)."""
    return _Parser("<insn>", config).instruction(line.split(), 0)[1]
