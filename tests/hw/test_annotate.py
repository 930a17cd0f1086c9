"""``vdla disasm --annotate``'s words for each kind of instruction (vdla_hw/annotate.py): the
module that runs it, what it moves or computes, and the tokens it waits for and signals, as
docs/spec.md sections 1 and 4 define them. (That annotated text assembles to the same bundle is
checked on every round trip of tests/hw/test_asm.py.)"""

import pytest

from vdla_hw.annotate import explain
from vdla_hw.asm import assemble_insn
from vdla_hw.config import load_config
from vdla_hw.isa import decode

TINY = load_config("tiny")  # BATCH 1, BLOCK_IN = BLOCK_OUT = 4


def words(text: str, label: str | None = None) -> str:
    return explain(decode(assemble_insn(text, TINY), TINY, 0), TINY, label)


@pytest.mark.parametrize("text, label, said", [
    ("LOAD inp sram=8 dram=3 y=2 x=4 stride=6 pad=1,0,2,1 pop_next push_next", "x+3",
     "load: inp[8:29] <- DRAM inp x+3, 2 rows of 4 every 6, zero padding top 1 bottom 0 left 2 right 1; "
     "waits for c2l; then signals l2c"),
    ("LOAD wgt sram=0 dram=0 y=1 x=9 stride=9", None, "load: wgt[0:9] <- DRAM wgt element 0, 9 elements"),
    ("LOAD uop sram=4 dram=7 y=1 x=1 stride=1", None, "compute: uop[4] <- DRAM uop element 7, 1 element"),
    ("LOAD inp sram=0 dram=0 y=0 x=3 pad=1,1,0,0", None,
     "load: inp[0:6] <- zero padding rows only (reads no DRAM)"),
    ("LOAD inp sram=0 dram=0 y=0 x=0 push_next", None, "load: moves nothing (carries tokens only); then signals l2c"),
    ("STORE out sram=2 dram=5 y=3 x=4 stride=4 pop_prev push_prev", None,
     "store: out[2:14] -> DRAM out element 5, 3 rows of 4 (contiguous); waits for c2s; then signals s2c"),
    ("GEMM uop=0:3 iter=2x5 dst=8,1 src=0,1 wgt=3,0 pop_prev push_next", None,
     "compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[0:3] x 2x5 iterations (i, j) with dst = uop.dst + 8i + j, "
     "src = uop.src + j, wgt = uop.wgt + 3i: 30 vector-matrix products, 480 multiply-adds); out mirrors acc's "
     "low 8 bits; waits for l2c; then signals c2s"),
    ("GEMM uop=0:4 iter=1x1 dst=0,0 reset pop_next", None,
     "compute: acc <- 0 at the addressed accumulators (uop[0:4] x 1x1 iterations (i, j) with dst = uop.dst: "
     "4 accumulator rows reset); waits for s2c"),
    ("ALU shr uop=2:3 iter=4x1 dst=1,0 src=1,0 imm=-3 push_prev", None,
     "compute: acc[dst] <- shr(acc[dst], immediate -3) (uop[2] x 4x1 iterations (i, j) with dst = uop.dst + i: "
     "4 vector operations of 4 lanes); out mirrors acc's low 8 bits; then signals c2l"),
    ("ALU max uop=0:1 iter=1x2 dst=0,1 src=0,2", None,
     "compute: acc[dst] <- max(acc[dst], acc[src]) (uop[0] x 1x2 iterations (i, j) with dst = uop.dst + j, "
     "src = uop.src + 2j: 2 vector operations of 4 lanes); out mirrors acc's low 8 bits"),
    ("FINISH pop_next", None, "compute: end of the program: raises done once every module has finished; waits for s2c"),
])
def test_each_kind_is_said_as_the_spec_defines_it(text, label, said):
    assert words(text, label) == said


def test_a_flag_its_module_does_not_have_is_named_not_a_crash():
    from vdla_hw.isa import Insn

    store = Insn("STORE", memory_type=4, x_size=1, y_size=1, pop_next=1)
    assert explain(store, TINY).endswith("waits for pop_next (not a store flag)")
