"""Random, correctly synchronised programs for differential tests (simulator vs reference
semantics; later RTL vs simulator). Deterministic per seed.

A program is a sequence of blocks run by ``threads`` virtual threads (1, or 2 for ping-pong):
block b uses SRAM partition t = b % threads of every buffer. Per block, in program order:

* load:    1-2 LOAD inp (2-D, strides, padding) and 0-2 LOAD wgt into partition t; the first
           pops c2l (when the partition was used before), the last pushes l2c;
* compute: LOAD uop of the block's micro-op table, maybe a LOAD acc (bias, padding), 1-4 of
           GEMM (reset or not), ALU (every op, immediate or vector) with random two-level
           loops; the first pops l2c (and s2c when the partition was stored before), the last
           pushes c2l and c2s;
* store:   1-2 STORE of partition t to a fresh DRAM region; the first pops c2s, the last
           pushes s2c.

Then compute pops the outstanding s2c tokens (x_size-0 flag carriers) and FINISH pops the last,
so FINISH retires after every store. Every access stays inside its partition, no GEMM breaks
the accumulator hazard rule, and at most ``threads`` tokens wait in any queue.

By default no non-reset GEMM repeats an accumulator of the ``timing.GEMM_HAZARD_DISTANCE`` uops
before it anywhere in its loop nest (the stricter rule the simulator had before the rule became
per sweep: these programs are the golden corpus). With ``repeats=True`` GEMMs may repeat accumulators across sweeps of their uop
list (half of them sum over ``iter_in`` or ``iter_out`` with a zero dst factor, as VTA's
kernels do), never within one sweep (``timing.gemm_hazard``).
"""

from __future__ import annotations

import numpy as np

from vdla_hw import isa, timing
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.config import Config, load_config

MEM = {m: i for i, m in enumerate(("uop", "wgt", "inp", "acc", "out"))}
CAPS = {"inp": 48, "wgt": 12, "acc": 32, "uop": 64}  # elements per partition used (keeps programs small)


class _Gen:
    def __init__(self, config: Config, rng: np.random.Generator, threads: int, repeats: bool = False):
        self.c, self.rng, self.threads, self.repeats = config, rng, threads, repeats
        self.b = BundleBuilder(config)
        self.part = {m: min(config.depth(m) // threads, CAPS[m]) for m in CAPS}
        self.stride = {m: config.depth(m) // threads for m in CAPS}
        sizes = {"inp": 96, "wgt": 32, "acc": 64}
        info = {"inp": 127, "wgt": 127}
        self.pool = {}
        for mem, n in sizes.items():
            shape = (n, *config.elem_shape(mem))
            if mem == "acc":
                big = rng.random() < 0.3
                data = rng.integers(-(1 << 31) if big else -(1 << 12), (1 << 31) if big else (1 << 12), size=shape)
            else:
                data = rng.integers(-info[mem] - 1, info[mem] + 1, size=shape)
            self.pool[mem] = (self.b.array(f"{mem}_pool", mem, data), n)
        self.blocks = 0

    def r(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def base(self, mem: str, t: int) -> int:
        return t * self.stride[mem]

    def transfer(self, mem: str, t: int, pad: bool, flags: dict) -> None:
        """A random 2-D LOAD of ``mem`` from its DRAM pool into partition t."""
        room = self.part[mem]
        pool, pool_n = self.pool[mem]
        if self.rng.random() < 0.05:
            self.b.emit("LOAD", memory_type=MEM[mem], **flags)  # moves nothing: carries flags
            return
        for _ in range(100):
            y, x = self.r(1, 3), self.r(1, 4)
            stride = x + (self.r(0, 3) if y > 1 else 0)
            pads = [self.r(0, 2) if pad and self.rng.random() < 0.4 else 0 for _ in range(4)]
            fp = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
            span = (y - 1) * stride + x
            if fp <= room and span <= pool_n:
                break
        else:
            y, x, stride, pads, fp, span = 1, 1, 1, [0] * 4, 1, 1
        sram = self.base(mem, t) + self.r(0, room - fp)
        self.b.emit("LOAD", memory_type=MEM[mem], sram_base=sram, dram_base=pool + self.r(0, pool_n - span),
                    y_size=y, x_size=x, x_stride=stride, y_pad_top=pads[0], y_pad_bottom=pads[1],
                    x_pad_left=pads[2], x_pad_right=pads[3], **flags)

    def loop(self, kind: str, t: int, reset: bool):
        """(uop rows, loop fields) of a GEMM/ALU inside partition t, hazard-free for GEMM."""
        srcmem = "inp" if kind == "GEMM" else "acc"
        for _ in range(200):
            nu, io, ii = self.r(1, 4), self.r(1, 3), self.r(1, 3)
            f = {k: self.r(0, 2) for k in ("dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in",
                                           "wgt_factor_out", "wgt_factor_in")}
            if kind == "ALU":
                f["wgt_factor_out"] = f["wgt_factor_in"] = 0
            elif self.repeats and self.rng.random() < 0.5:
                f["dst_factor_in" if self.rng.random() < 0.7 else "dst_factor_out"] = 0  # a sum across sweeps
            reach = {p: (io - 1) * f[f"{p}_factor_out"] + (ii - 1) * f[f"{p}_factor_in"] for p in ("dst", "src", "wgt")}
            lim = {"dst": self.part["acc"], "src": self.part[srcmem], "wgt": self.part["wgt"]}
            if any(reach[p] >= lim[p] for p in lim):
                continue
            rows = [(self.base("acc", t) + self.r(0, lim["dst"] - 1 - reach["dst"]),
                     self.base(srcmem, t) + self.r(0, lim["src"] - 1 - reach["src"]),
                     self.base("wgt", t) + self.r(0, lim["wgt"] - 1 - reach["wgt"]) if kind == "GEMM" else 0)
                     for _ in range(nu)]
            if kind == "GEMM" and self.rng.random() < 0.3:
                rows = [(d, rows[0][1], w) for d, _, w in rows]  # shared src: the dense plan
            if kind == "GEMM" and not reset:
                dst = (np.array([r[0] for r in rows])[None, None, :] + np.arange(io)[:, None, None] * f["dst_factor_out"]
                       + np.arange(ii)[None, :, None] * f["dst_factor_in"]).reshape(-1)
                if timing.gemm_hazard(dst, nu if self.repeats else None) >= 0:
                    continue
            if kind == "ALU":
                del f["wgt_factor_out"], f["wgt_factor_in"]
            return rows, dict(iter_out=io, iter_in=ii, **f)
        return [(self.base("acc", t), self.base(srcmem, t), self.base("wgt", t))], dict(iter_out=1, iter_in=1)

    def block(self, b: int) -> None:
        t, c = b % self.threads, self.c
        reused = b >= self.threads
        # load
        n_inp, n_wgt = self.r(1, 2), self.r(0, 2)
        loads = ["inp"] * n_inp + ["wgt"] * n_wgt
        self.rng.shuffle(loads)
        for k, mem in enumerate(loads):
            flags = {}
            if k == 0 and reused:
                flags["pop_next"] = 1
            if k == len(loads) - 1:
                flags["push_next"] = 1
            self.transfer(mem, t, mem == "inp", flags)
        # compute: ops first (to size the uop table), then emit
        ops, table = [], []
        for _ in range(self.r(1, 4)):
            kind = "GEMM" if self.rng.random() < 0.55 else "ALU"
            reset = self.rng.random() < (0.3 if kind == "GEMM" else 0.08)
            rows, fields = self.loop(kind, t, reset)
            if len(table) + len(rows) > self.part["uop"]:
                break
            fields.update(uop_bgn=self.base("uop", t) + len(table), uop_end=self.base("uop", t) + len(table) + len(rows),
                          reset=int(reset))
            table += rows
            if kind == "ALU":
                op = self.r(0, len(isa.ALU_OPS) - 1)
                fields["alu_opcode"] = op
                if self.rng.random() < 0.5:
                    imm = self.r(-12, 12) if isa.ALU_OPS[op] == "shr" else self.r(-(1 << 15), (1 << 15) - 1)
                    fields.update(use_imm=1, imm=imm)
            ops.append((kind, fields))
        uops = self.b.uops(f"uops_{b}", table)
        first = {"pop_prev": 1, **({"pop_next": 1} if reused else {})}
        self.b.emit("LOAD", memory_type=MEM["uop"], sram_base=self.base("uop", t), dram_base=uops,
                    y_size=1, x_size=len(table), x_stride=len(table), **first)
        if self.rng.random() < 0.5:
            self.transfer("acc", t, True, {})
        for k, (kind, fields) in enumerate(ops):
            if k == len(ops) - 1:
                fields.update(push_prev=1, push_next=1)
            self.b.emit(kind, **fields)
        # store
        n_store = self.r(1, 2)
        for k in range(n_store):
            flags = {"pop_prev": 1} if k == 0 else {}
            if k == n_store - 1:
                flags["push_prev"] = 1
            y, x = self.r(1, 3), self.r(1, 4)
            while y * x > self.part["acc"]:
                y = 1
            stride = x + (self.r(0, 2) if y > 1 else 0)
            if self.rng.random() < 0.05:
                self.b.emit("STORE", memory_type=MEM["out"], **flags)
                continue
            region = self.b.alloc(f"out_{b}_{k}", "out", (y - 1) * stride + x)
            self.b.emit("STORE", memory_type=MEM["out"], sram_base=self.base("acc", t) + self.r(0, self.part["acc"] - y * x),
                        dram_base=region, y_size=y, x_size=x, x_stride=stride, **flags)
        del c

    def finish(self, blocks: int) -> Bundle:
        outstanding = min(blocks, self.threads)
        for _ in range(outstanding - 1):
            self.b.emit("LOAD", memory_type=MEM["acc"], pop_next=1)
        self.b.emit("FINISH", pop_next=1)
        self.b.meta = {"producer": "vdla_sim.progen"}
        return self.b.build()


def random_program(seed: int, config: str | Config = "tiny", *, threads: int | None = None,
                   blocks: int | None = None, repeats: bool = False) -> Bundle:
    """A random correctly synchronised program (see the module docstring); same seed, same bundle.
    ``repeats``: GEMMs may repeat accumulators across sweeps of their uop list."""
    config = load_config(config)
    rng = np.random.default_rng([seed, 0x5EED])
    threads = int(rng.integers(1, 3)) if threads is None else threads
    blocks = int(rng.integers(1, 5)) if blocks is None else blocks
    gen = _Gen(config, rng, threads, repeats)
    for b in range(blocks):
        gen.block(b)
    return gen.finish(blocks)
