"""Machine basic blocks of one function, read from LLVM's verbose assembly.

Verbose assembly (``TargetMachine.set_asm_verbosity(True)``) prints, for every machine basic
block (MBB), its number, the IR block it came from and its place in the loop nest::

    .LBB0_6:                                @ %b5
                                            @   Parent Loop BB0_2 Depth=1
                                            @ =>  This Inner Loop Header: Depth=2
    @ %bb.7:                                @ %b7          (a block reached only by fall-through)
                                            @   in Loop: Header=BB0_6 Depth=2

(``//`` instead of ``@`` on AArch64). This module turns that into :class:`MachineBlock` s with
their instructions (directives, labels and comments dropped), the IR block name, the loop
headers they sit in (innermost first) and their successors (branch targets, fall-through).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class MachineBlock:
    number: int
    ir_block: str | None
    instructions: list[str] = field(default_factory=list)
    loops: list[int] = field(default_factory=list)   # headers of the loops it is in, innermost first
    successors: set[int] = field(default_factory=set)
    ends: bool = False   # last instruction is an unconditional branch or a return

    @property
    def is_header(self) -> bool:
        return bool(self.loops) and self.loops[0] == self.number


def comment_char(triple: str) -> str:
    return "//" if triple.startswith(("aarch64", "arm64")) else "@"


_TARGET = re.compile(r"\.LBB\d+_(\d+)\b")
_RETURNS = re.compile(r"^(bx\s+lr|ret)\b|^(pop|ldm\S*)\s.*\bpc\b")


def _is_branch(mnemonic: str, arm: bool) -> tuple[bool, bool]:
    """(is a branch to a label, is unconditional) for a mnemonic."""
    if arm:
        if mnemonic == "b":
            return True, True
        conds = ("eq", "ne", "hs", "cs", "lo", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le")
        return mnemonic[:1] == "b" and mnemonic[1:] in conds, False
    if mnemonic == "b":
        return True, True
    return mnemonic.startswith("b.") or mnemonic in ("cbz", "cbnz", "tbz", "tbnz"), False


def parse_function(asm_text: str, symbol: str, triple: str) -> list[MachineBlock]:
    """The MBBs of ``symbol`` in layout order (the first is the entry block)."""
    cc = comment_char(triple)
    arm = cc == "@"
    header = re.compile(rf"^(?:\.LBB\d+_(\d+):|{re.escape(cc)} %bb\.(\d+):)\s*(?:{re.escape(cc)}\s*%(\S+))?")
    lines = asm_text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.split(cc)[0].strip() == f"{symbol}:")
    except StopIteration:
        raise ValueError(f"assembly has no function {symbol}") from None
    blocks: list[MachineBlock] = []
    parents: dict[int, list[int]] = {}
    for line in lines[start + 1:]:
        if line.startswith(".Lfunc_end") or line.strip().startswith(".size") or line.strip() == ".fnend":
            break
        match = header.match(line)
        if match:
            number = int(match.group(1) or match.group(2))
            blocks.append(MachineBlock(number, match.group(3)))
            continue
        if not blocks:
            continue
        block = blocks[-1]
        code, _, comment = line.partition(cc)
        code = code.strip()
        if not code:
            _loop_comment(block, comment, parents)
            continue
        if code.startswith(".") or code.endswith(":"):
            continue  # directive or a non-block label (constant pool)
        block.instructions.append(code)
    _link(blocks, parents, arm)
    return blocks


def _loop_comment(block: MachineBlock, comment: str, parents: dict[int, list[int]]) -> None:
    text = comment.strip()
    inside = re.search(r"in Loop: Header=BB\d+_(\d+)", text)
    if inside and not block.loops:
        block.loops.append(int(inside.group(1)))
    if "Loop Header" in text and "=>" in text:
        block.loops.insert(0, block.number)
    parent = re.search(r"Parent Loop BB\d+_(\d+)", text)
    if parent:
        parents.setdefault(block.number, []).append(int(parent.group(1)))


def _link(blocks: list[MachineBlock], parents: dict[int, list[int]], arm: bool) -> None:
    """Full loop chains (innermost first) and successors."""
    for block in blocks:
        if block.loops:
            header = block.loops[0]
            outer = sorted(parents.get(header, []), key=lambda h: -len(parents.get(h, [])))
            block.loops = [header] + [h for h in outer if h != header]
    for index, block in enumerate(blocks):
        for code in block.instructions:
            mnemonic = code.split()[0]
            branch, unconditional = _is_branch(mnemonic, arm)
            if branch:
                target = _TARGET.search(code)
                if target:
                    block.successors.add(int(target.group(1)))
        last = block.instructions[-1] if block.instructions else ""
        mnemonic = last.split()[0] if last else ""
        block.ends = bool(last) and (_is_branch(mnemonic, arm) == (True, True) or bool(_RETURNS.match(last)))
        if not block.ends and index + 1 < len(blocks):
            block.successors.add(blocks[index + 1].number)


def loop_entries(blocks: list[MachineBlock], counts: dict[int, int]) -> dict[int, int]:
    """Times each loop (by header number) is entered from outside, from per-MBB execution counts.

    An edge P -> H from outside the loop is taken at most count(P) times; a loop cannot be
    entered more often than its header runs."""
    inside = {h: {b.number for b in blocks if h in b.loops} for b2 in blocks for h in b2.loops}
    entries = {}
    for header, members in inside.items():
        total = sum(counts.get(b.number, 0) for b in blocks if b.number not in members and header in b.successors)
        entries[header] = min(total, counts.get(header, 0))
    return entries
