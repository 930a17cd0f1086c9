"""A small numpy model of VTA's semantics as VTA defines them, for differential tests in CI
(VTA's own simulator cannot be fetched there). Written from reading VTA's sources, not copied:
its functional simulator (onera/standalone-vta src/simulators/functional_simulator/src/sim_driver.cc
and sim_tlpp.cc, the same code as apache/tvm-vta src/sim/sim_driver.cc and sim_tlpp.cc) and its
HLS design (apache/tvm-vta hardware/xilinx/src/vta.cc) where they agree.

The model runs a *flat* VTA directory (``vdla export-vta --flat``: ``dram.bin`` from VTA physical
address 0x1000, ``instructions.bin``, ``memory_addresses.csv``), with VTA's physical addresses in
every ``dram_base``. An ALU ignores its reset bit and a LOAD with ``y_size`` 0 writes its padding
rows, as in VDLA since issue 25. Each place where VTA's definition still differs from VDLA's
(docs/spec.md section 9) is one entry of :data:`DIFFERENCES`; ``vdla=`` names the entries to compute VDLA's way instead, so
``run(..., vdla=DIFFERENCES)`` must leave the image `vdla exec` leaves.

Scheduling: like VTA's fsim (sim_tlpp.cc), each of the load, compute and store modules runs its
queue in order until an instruction pops an empty token queue; the modules take turns until
FINISH has run and none can move. So a pop waits for a push later in program order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vdla_hw import isa
from vdla_hw.config import Config, load_config

PAGE = 0x1000  # VTA's first physical page is never mapped (virtual_memory.cc)

# name -> VTA's behaviour (and its file) / VDLA's behaviour
DIFFERENCES = {
    "store_reads_acc": "fsim: STORE writes the low 8 bits of the accumulators (sim_driver.cc TruncStore reads "
                       "acc_; there is no OUT buffer), so it stores what LOAD ACC loaded; VDLA (like VTA's HLS, "
                       "vta.cc out_mem) stores the OUT buffer, which only GEMM and ALU write",
    "mul_full_operand": "fsim: MUL multiplies by the whole 32-bit operand (sim_driver.cc); VDLA by its low 8 bits",
    "shr_amount": "fsim: SHR shifts by the operand as C++ on x86 does (right for >= 0, left for < 0, the count "
                  "taken mod 32); VDLA clamps the amount to [-31, 31]",
}


class ModelError(Exception):
    """A program VTA's fsim would stop on (a CHECK) or hang on (a deadlock)."""


def read_flat(folder: str | Path) -> tuple[np.ndarray, int, int]:
    """(image from PAGE, instruction physical address, instruction count) of a flat directory."""
    folder = Path(folder)
    image = np.fromfile(folder / "dram.bin", dtype=np.uint8)
    rows = dict(line.split(",")[:2] for line in (folder / "memory_addresses.csv").read_text().split())
    count = (folder / "instructions.bin").stat().st_size // 16
    return image, int(rows["INSN"], 16), count


class _Machine:
    def __init__(self, image: np.ndarray, config: Config, vdla: frozenset[str]):
        self.c, self.vdla, self.dram = config, vdla, image
        c = config
        self.uop = np.zeros(c.depth("uop"), dtype=np.uint32)
        self.inp = np.zeros((c.depth("inp"), c.batch, c.block_in), dtype=np.int8)
        self.wgt = np.zeros((c.depth("wgt"), c.block_out, c.block_in), dtype=np.int8)
        self.acc = np.zeros((c.depth("acc"), c.batch, c.block_out), dtype=np.int32)
        self.out = np.zeros((c.depth("acc"), c.batch, c.block_out), dtype=np.int8)  # VDLA's only

    def _dram(self, mem: str, dtype, shape) -> np.ndarray:
        """DRAM as elements of ``mem``, element k at physical address k * element bytes."""
        size = self.c.elem_bytes(mem)
        front = np.zeros(PAGE, dtype=np.uint8)  # page 0: unmapped, caught in _check
        whole = np.concatenate([front, self.dram, np.zeros((-self.dram.size) % size, dtype=np.uint8)])
        return whole.view(dtype).reshape(-1, *shape)

    def _check(self, lo: int, hi: int, mem: str, where: str) -> None:
        size = self.c.elem_bytes(mem)
        if lo * size < PAGE or hi * size > PAGE + self.dram.size:
            raise ModelError(f"{where}: {mem} DRAM elements {lo}..{hi - 1} outside the mapped memory")

    def load(self, insn, where):
        if insn.x_size == 0:
            return
        mem = insn.mem
        sram = {"uop": self.uop, "inp": self.inp, "wgt": self.wgt, "acc": self.acc}[mem]
        y_size = insn.y_size
        xt = insn.x_pad_left + insn.x_size + insn.x_pad_right
        yt = insn.y_pad_top + y_size + insn.y_pad_bottom
        if insn.sram_base + xt * yt > len(sram):
            raise ModelError(f"{where}: {mem} SRAM end {insn.sram_base + xt * yt} past {len(sram)}")
        tile = np.zeros((yt, xt, *sram.shape[1:]), dtype=sram.dtype)
        if y_size:
            last = insn.dram_base + (y_size - 1) * insn.x_stride + insn.x_size
            self._check(insn.dram_base, last, mem, where)
            src = self._dram(mem, sram.dtype, sram.shape[1:])
            for r in range(y_size):
                start = insn.dram_base + r * insn.x_stride
                tile[insn.y_pad_top + r, insn.x_pad_left:insn.x_pad_left + insn.x_size] = src[start:start + insn.x_size]
        sram[insn.sram_base:insn.sram_base + xt * yt] = tile.reshape(-1, *sram.shape[1:])

    def store(self, insn, where):
        if insn.x_size == 0:
            return
        last = insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size
        if insn.y_size:
            self._check(insn.dram_base, last, "out", where)
        source = self.out if "store_reads_acc" in self.vdla else self.acc.astype(np.int8)  # low 8 bits
        dst = self._dram("out", np.int8, self.out.shape[1:])
        for r in range(insn.y_size):
            first = insn.sram_base + r * insn.x_size
            start = insn.dram_base + r * insn.x_stride
            dst[start:start + insn.x_size] = source[first:first + insn.x_size]
        flat = dst.view(np.uint8).reshape(-1)[PAGE:PAGE + self.dram.size]
        self.dram[:] = flat

    def alu(self, op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = a.astype(np.int64), b.astype(np.int64)
        if op == "min":
            r = np.minimum(a, b)
        elif op == "max":
            r = np.maximum(a, b)
        elif op == "add":
            r = a + b
        elif op == "mul":
            r = a * ((((b & 0xFF) ^ 0x80) - 0x80) if "mul_full_operand" in self.vdla else b)
        elif "shr_amount" in self.vdla:
            n = np.clip(b, -31, 31)
            r = np.where(n >= 0, a >> np.maximum(n, 0), a << np.maximum(-n, 0))
        else:
            right, left = b & 31, (-b) & 31
            r = np.where(b >= 0, a >> right, a << left)
        return ((r + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)

    def compute(self, insn, where):
        uops = isa.decode_uops(self.uop[insn.uop_bgn:insn.uop_end], self.c)
        op = isa.ALU_OPS[insn.alu_opcode] if insn.kind == "ALU" else None
        for i in range(insn.iter_out):
            for j in range(insn.iter_in):
                for d0, s0, w0 in uops:
                    d = d0 + i * insn.dst_factor_out + j * insn.dst_factor_in
                    s = s0 + i * insn.src_factor_out + j * insn.src_factor_in
                    if d >= len(self.acc):
                        raise ModelError(f"{where}: acc index {d} past the SRAM")
                    if insn.kind == "GEMM" and insn.reset:
                        self.acc[d] = 0
                    elif insn.kind == "GEMM":
                        w = w0 + i * insn.wgt_factor_out + j * insn.wgt_factor_in
                        prod = self.inp[s].astype(np.int64) @ self.wgt[w].astype(np.int64).T
                        self.acc[d] = ((self.acc[d] + prod + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
                    else:
                        operand = np.full_like(self.acc[d], insn.imm) if insn.use_imm else self.acc[s]
                        self.acc[d] = self.alu(op, self.acc[d], operand)
                    self.out[d] = self.acc[d].astype(np.int8)


def run(image: np.ndarray, insn_phys: int, count: int, config: str | Config = "vta-pynq", *,
        vdla=frozenset()) -> np.ndarray:
    """The final image (from PAGE) of the program of ``count`` instructions at ``insn_phys``."""
    config = load_config(config)
    unknown = set(vdla) - set(DIFFERENCES)
    if unknown:
        raise ValueError(f"unknown differences {sorted(unknown)}")
    m = _Machine(image.copy(), config, frozenset(vdla))
    at = insn_phys - PAGE
    insns = isa.decode_program(m.dram[at:at + 16 * count].tobytes(), config)
    queues = {"load": [], "compute": [], "store": []}
    for index, insn in enumerate(insns):
        queues[insn.module].append((index, insn))
    tokens = {q: 0 for q in isa.TOKEN_QUEUES}
    finished, moved = False, True
    while moved:
        moved = False
        for module, queue in queues.items():
            while queue:
                index, insn = queue[0]
                wanted = isa.pops(insn)
                if any(tokens[q] == 0 for q in wanted):
                    break
                for q in wanted:
                    tokens[q] -= 1
                where = f"instruction {index} ({insn.kind})"
                if insn.kind == "LOAD":
                    m.load(insn, where)
                elif insn.kind == "STORE":
                    m.store(insn, where)
                elif insn.kind in ("GEMM", "ALU"):
                    m.compute(insn, where)
                else:
                    finished = True
                for q in isa.pushes(insn):
                    tokens[q] += 1
                queue.pop(0)
                moved = True
    if not finished:
        left = {k: [i for i, _ in q[:1]] for k, q in queues.items() if q}
        raise ModelError(f"deadlock: FINISH never ran (modules wait at instructions {left})")
    return m.dram


def run_flat(folder: str | Path, config: str | Config = "vta-pynq", *, vdla=frozenset()) -> np.ndarray:
    image, insn_phys, count = read_flat(folder)
    return run(image, insn_phys, count, config, vdla=vdla)
