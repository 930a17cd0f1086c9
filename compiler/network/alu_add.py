"""Residual add on the accelerator's ALU: ``clip(((a << a_shift) + (b << b_shift) + offset) >> shift, lo, hi)``.

Both int8 operands are widened to int32 and packed into the accumulator layout
(N/BATCH, C/BLOCK_OUT, H, W, BATCH, BLOCK_OUT) by the CPU; compute loads a tile of each into
the accumulator SRAM, shifts (SHR by a negative amount is a left shift), adds, requantizes
(SHR, MAX, MIN; the OUT buffer mirrors the low 8 bits) and hands the tile to store. The
accumulator SRAM is split in two halves so the store of one tile overlaps the next tile's work:

    compute, tile t in half h:  [pop s2c if t >= 2]  LOAD acc a, LOAD acc b, ALU ...  push c2s
    store,   tile t:            pop c2s  STORE out  push s2c
    end:                        compute pops the last stores' tokens, FINISH
"""

from __future__ import annotations

import numpy as np

from compiler import layout
from compiler.quantize.qgraph import QNode
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.config import Config
from vdla_hw.isa import ALU_OPS

ACC, OUT, UOP = 3, 4, 0


def compile_add(a: np.ndarray, b: np.ndarray, *, a_shift: int, b_shift: int, shift: int, relu: bool = False,
                config: Config, name: str = "add", offset: int = 0, lo: int | None = None, hi: int = 127) -> Bundle:
    """A bundle whose symbol ``out`` receives the requantized sum of NCHW int8 ``a`` and ``b``."""
    c = config
    n, ch, h, w = a.shape
    packed_a = layout.pack_activations(a, c.batch, c.block_out, dtype=np.int32)
    packed_b = layout.pack_activations(b, c.batch, c.block_out, dtype=np.int32)
    elems = packed_a.size // (c.batch * c.block_out)
    tile = min(c.depth("acc") // 4, (1 << 14) - 1)
    b_ = BundleBuilder(c)
    src_a = b_.array("a", "acc", packed_a.reshape(elems, c.batch, c.block_out))
    src_b = b_.array("b", "acc", packed_b.reshape(elems, c.batch, c.block_out))
    dst = b_.alloc("out", "out", elems)
    # uops: per half h, (A base, B base) for the add and the A/B shifts.
    halves = [(2 * tile * h, 2 * tile * h + tile) for h in (0, 1)]
    uops = [(a0, b0, 0) for a0, b0 in halves] + [(b0, 0, 0) for _, b0 in halves]
    k = b_.uops("k", uops)
    b_.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=len(uops), x_stride=len(uops))
    lo = (0 if relu else -128) if lo is None else lo
    tiles = range(0, elems, tile)
    for t, start in enumerate(tiles):
        count = min(tile, elems - start)
        half = t % 2
        a0, b0 = halves[half]
        loop = dict(iter_out=count, iter_in=1, dst_factor_out=1, src_factor_out=1)
        b_.emit("LOAD", memory_type=ACC, sram_base=a0, dram_base=src_a + start, y_size=1, x_size=count,
                x_stride=count, pop_next=int(t >= 2))
        b_.emit("LOAD", memory_type=ACC, sram_base=b0, dram_base=src_b + start, y_size=1, x_size=count, x_stride=count)
        if a_shift:
            b_.emit("ALU", alu_opcode=ALU_OPS.index("shr"), uop_bgn=half, uop_end=half + 1, use_imm=1, imm=-a_shift, **loop)
        if b_shift:
            b_.emit("ALU", alu_opcode=ALU_OPS.index("shr"), uop_bgn=2 + half, uop_end=3 + half, use_imm=1,
                    imm=-b_shift, **loop)
        b_.emit("ALU", alu_opcode=ALU_OPS.index("add"), uop_bgn=half, uop_end=half + 1, **loop)
        if offset:
            b_.emit("ALU", alu_opcode=ALU_OPS.index("add"), uop_bgn=half, uop_end=half + 1, use_imm=1, imm=offset,
                    **loop)
        b_.emit("ALU", alu_opcode=ALU_OPS.index("shr"), uop_bgn=half, uop_end=half + 1, use_imm=1, imm=shift, **loop)
        b_.emit("ALU", alu_opcode=ALU_OPS.index("max"), uop_bgn=half, uop_end=half + 1, use_imm=1, imm=lo, **loop)
        b_.emit("ALU", alu_opcode=ALU_OPS.index("min"), uop_bgn=half, uop_end=half + 1, use_imm=1, imm=hi,
                push_next=1, **loop)
        b_.emit("STORE", memory_type=OUT, sram_base=a0, dram_base=dst + start, y_size=1, x_size=count,
                x_stride=count, pop_prev=1, push_prev=1)
    if len(tiles) >= 2:
        b_.emit("LOAD", memory_type=ACC, pop_next=1)  # moves nothing: waits for the second-to-last store
    b_.emit("FINISH", pop_next=1)  # waits for the last store
    b_.meta = {"producer": "compiler.network.alu_add", "name": name, "shape": [n, ch, h, w],
               "output": {"symbol": "out", "shape": list(packed_a.shape)}}
    return b_.build(add_finish=False)


def add_output(bundle: Bundle, dram: np.ndarray) -> np.ndarray:
    """The NCHW int8 sum from a run's final image."""
    n, ch, _, _ = bundle.meta["shape"]
    packed = bundle.read("out", dram).reshape(bundle.meta["output"]["shape"])
    return layout.unpack_activations(packed, n, ch)


def compile_vdla_add(node: QNode, args: list[np.ndarray], config: Config) -> Bundle:
    """The ALU bundle of the quantized add ``node`` on the int8 operands ``args``."""
    a = node.attrs
    return compile_add(args[0], args[1], a_shift=a["a_shift"], b_shift=a["b_shift"], shift=a["shift"],
                       offset=a["offset"], lo=a["lo"], hi=a["hi"], config=config, name=node.name)
