"""What one instruction does, in words: the comments of ``vdla disasm --annotate``.

:func:`explain` says which module runs an instruction (docs/spec.md section 1), what it moves or
computes (section 4's semantics, in element ranges of the SRAMs and of the DRAM image), how much
work that is, and which token queues it waits on before it starts and signals when it ends.
It reads only the decoded instruction and the configuration, so it works on any bundle, and it
never changes what is disassembled: the annotation is a comment the assembler skips.
"""

from __future__ import annotations

from vdla_hw import isa
from vdla_hw.config import Config


def _span(mem: str, lo: int, count: int) -> str:
    """``mem[lo:lo+count]`` (one element: ``mem[lo]``)."""
    return f"{mem}[{lo}]" if count == 1 else f"{mem}[{lo}:{lo + count}]"


def _plural(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _dram(insn: isa.Insn, label: str | None) -> str:
    """The DRAM rows a LOAD or STORE touches: element ranges of its memory type in the image."""
    where = label or f"element {insn.dram_base}"
    if insn.y_size <= 1:
        return f"DRAM {insn.mem} {where}, {_plural(insn.x_size, 'element')}"
    return (f"DRAM {insn.mem} {where}, {insn.y_size} rows of {insn.x_size} "
            f"{'(contiguous)' if insn.x_stride == insn.x_size else f'every {insn.x_stride}'}")


def _move(insn: isa.Insn, label: str | None) -> str:
    if insn.kind == "STORE":
        if insn.x_size == 0 or insn.y_size == 0:
            return "moves nothing (carries tokens only)"
        return f"{_span('out', insn.sram_base, insn.y_size * insn.x_size)} -> {_dram(insn, label)}"
    pads = (insn.y_pad_top, insn.y_pad_bottom, insn.x_pad_left, insn.x_pad_right)
    width = insn.x_pad_left + insn.x_size + insn.x_pad_right
    footprint = (insn.y_pad_top + insn.y_size + insn.y_pad_bottom) * width if insn.x_size else 0
    if footprint == 0:
        return "moves nothing (carries tokens only)"
    if insn.y_size == 0:
        return f"{_span(insn.mem, insn.sram_base, footprint)} <- zero padding rows only (reads no DRAM)"
    text = f"{_span(insn.mem, insn.sram_base, footprint)} <- {_dram(insn, label)}"
    if any(pads):
        text += f", zero padding top {pads[0]} bottom {pads[1]} left {pads[2]} right {pads[3]}"
    return text


def _loops(insn: isa.Insn) -> tuple[int, str]:
    """(micro-ops run, the loop nest in words)."""
    uops = max(insn.uop_end - insn.uop_bgn, 0)
    runs = insn.iter_out * insn.iter_in * uops
    table = _span("uop", insn.uop_bgn, uops) if uops else "no micro-ops"
    return runs, f"{table} x {insn.iter_out}x{insn.iter_in} iterations (i, j)"


def _index(name: str, out: int, inner: int) -> str:
    """How a loop nest moves one operand's index: ``dst = uop.dst + 4i + j``."""
    terms = [f"{f}{v}" if f != 1 else v for f, v in ((out, "i"), (inner, "j")) if f]
    return f"{name} = uop.{name}" + "".join(f" + {t}" for t in terms)


def _compute(insn: isa.Insn, config: Config) -> str:
    runs, nest = _loops(insn)
    operands = [("dst", insn.dst_factor_out, insn.dst_factor_in), ("src", insn.src_factor_out, insn.src_factor_in)]
    if insn.kind == "GEMM":
        operands.append(("wgt", insn.wgt_factor_out, insn.wgt_factor_in))
    if (insn.kind == "GEMM" and insn.reset) or (insn.kind == "ALU" and insn.use_imm):
        operands = operands[:1]  # a reset reads nothing; an immediate replaces src
    nest += " with " + ", ".join(_index(*o) for o in operands)
    if insn.kind == "GEMM":
        if insn.reset:
            return f"acc <- 0 at the addressed accumulators ({nest}: {_plural(runs, 'accumulator row')} reset)"
        macs = runs * config.batch * config.block_in * config.block_out
        return (f"acc[dst] += inp[src] x wgt[wgt]^T ({nest}: {_plural(runs, 'vector-matrix product')}, "
                f"{macs:,} multiply-adds); out mirrors acc's low 8 bits")
    op = isa.ALU_OPS[insn.alu_opcode] if insn.alu_opcode < len(isa.ALU_OPS) else f"op {insn.alu_opcode}"
    operand = f"immediate {insn.imm}" if insn.use_imm else "acc[src]"
    return (f"acc[dst] <- {op}(acc[dst], {operand}) ({nest}: {_plural(runs, 'vector operation')} of "
            f"{config.batch * config.block_out} lanes); out mirrors acc's low 8 bits")


def _queues(insn: isa.Insn, flags: tuple[str, str]) -> list[str]:
    """The token queues behind ``flags`` set on ``insn``; a flag its module does not have (an
    encoding error the program check reports) is named as such."""
    return [isa.FLAG_QUEUE.get((insn.module, f), f"{f} (not a {insn.module} flag)")
            for f in flags if insn.fields.get(f, 0)]


def _tokens(insn: isa.Insn) -> str:
    waits, signals = _queues(insn, ("pop_prev", "pop_next")), _queues(insn, ("push_prev", "push_next"))
    parts = ([f"waits for {', '.join(waits)}"] if waits else []) + ([f"then signals {', '.join(signals)}"]
                                                                    if signals else [])
    return "; ".join(parts)


def explain(insn: isa.Insn, config: Config, label: str | None = None) -> str:
    """One line: ``module: what it does; the tokens it waits for and signals``. ``label`` names
    a LOAD's or STORE's DRAM address by its symbol (``w+2``), when the caller knows it."""
    if insn.kind in ("LOAD", "STORE"):
        what = _move(insn, label)
    elif insn.kind == "FINISH":
        what = "end of the program: raises done once every module has finished"
    else:
        what = _compute(insn, config)
    tokens = _tokens(insn)
    return f"{insn.module}: {what}" + (f"; {tokens}" if tokens else "")

