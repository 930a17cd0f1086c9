"""Latency hiding on annotated sequences that are not convolutions: the simulator (concurrent
modules, race check) agrees with the reference semantics (program order); tokens fold onto
instructions or no-ops; dependency edges never cross."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import vdla_sim
from compiler.annotated import Op, Segment, annotate
from compiler.latency_hiding import hide_latency, interleave, partition, split
from compiler.latency_hiding.tokens import Token, dependencies, fold_tokens
from vdla_hw import isa
from vdla_hw.bundle import BundleBuilder
from vdla_hw.config import MEM_TYPES
from vdla_hw.errors import VdlaError
from vdla_hw.semantics import execute

MT = {m: i for i, m in enumerate(MEM_TYPES)}


def gemm_shr_program(threads: int, items: int, m: int, nw: int, seed: int):
    """out[i] = (inp[i] @ wgt[i % nw].T) >> 2 for item i, items split over virtual threads."""
    b = BundleBuilder("tiny")
    c = b.config
    rng = np.random.default_rng(seed)
    inp = b.array("inp", "inp", rng.integers(-128, 128, (items * m, *c.elem_shape("inp"))))
    wgt = b.array("wgt", "wgt", rng.integers(-128, 128, (nw, *c.elem_shape("wgt"))))
    out = b.alloc("out", "out", items * m)
    slices = {mem: partition(c.depth(mem), threads) for mem in ("inp", "wgt", "acc")}
    tables, next_uop = [], 0
    for t in range(threads):
        acc = slices["acc"][t][0]
        rows = [(acc + p, slices["inp"][t][0] + p, slices["wgt"][t][0]) for p in range(m)]
        rows += [(acc + p, acc + p, 0) for p in range(m)]  # the ALU's table
        tables.append((next_uop, np.array(rows)))
        next_uop += 2 * m
    uops = b.uops("uops", np.concatenate([r for _, r in tables]))
    per_thread = []
    for t, mine in enumerate(split(list(range(items)), threads)):
        segs = []
        bgn, rows = tables[t]
        for i in mine:
            ops = [annotate(isa.Insn("LOAD", memory_type=MT["inp"], sram_base=slices["inp"][t][0],
                                     dram_base=inp + i * m, y_size=1, x_size=m, x_stride=m), thread=t),
                   annotate(isa.Insn("LOAD", memory_type=MT["wgt"], sram_base=slices["wgt"][t][0],
                                     dram_base=wgt + i % nw, y_size=1, x_size=1, x_stride=1), thread=t)]
            loops = dict(uop_bgn=bgn, uop_end=bgn + m, iter_out=1, iter_in=1)
            ops.append(annotate(isa.Insn("GEMM", reset=1, **loops), rows[:m], thread=t))
            ops.append(annotate(isa.Insn("GEMM", **loops), rows[:m], thread=t))
            segs.append(Segment(ops))
            alu = dict(uop_bgn=bgn + m, uop_end=bgn + 2 * m, iter_out=1, iter_in=1)
            ops = [annotate(isa.Insn("ALU", alu_opcode=isa.ALU_OPS.index("shr"), use_imm=1, imm=2, **alu), rows[m:],
                            thread=t),
                   annotate(isa.Insn("STORE", memory_type=MT["out"], sram_base=slices["acc"][t][0],
                                     dram_base=out + i * m, y_size=1, x_size=m, x_stride=m), thread=t)]
            segs.append(Segment(ops))
        per_thread.append(segs)
    per_thread[0][0].ops.insert(0, annotate(isa.Insn("LOAD", memory_type=MT["uop"], dram_base=uops, y_size=1,
                                                     x_size=next_uop, x_stride=next_uop)))
    return b, per_thread


def build(builder, per_thread):
    for insn in hide_latency(per_thread, builder.config):
        builder.insns.append(insn)
    return builder.build(add_finish=False)


@settings(max_examples=25)
@given(threads=st.integers(1, 3), items=st.integers(1, 7), m=st.integers(3, 8), nw=st.integers(1, 3),
       seed=st.integers(0, 99))
def test_generic_program_sim_vs_reference_semantics(threads, items, m, nw, seed):
    bundle = build(*gemm_shr_program(threads, items, m, nw, seed))
    ref = execute(bundle)
    sim = vdla_sim.simulate(bundle)
    assert (sim.dram == ref.dram).all()
    assert not any(sim.tokens_left.values()) and not any(ref.tokens_left.values())


def test_same_results_with_any_thread_count():
    images = [build(*gemm_shr_program(t, 5, 4, 2, 7)) for t in (1, 2, 3)]
    outs = [b.read("out", vdla_sim.simulate(b).dram) for b in images]
    assert all((o == outs[0]).all() for o in outs)


def test_without_tokens_the_simulator_reports_a_race():
    builder, per_thread = gemm_shr_program(2, 4, 4, 1, 0)
    flags = set(isa.FLAGS)
    for insn in hide_latency(per_thread, builder.config):
        builder.insns.append(isa.Insn(insn.kind, **{k: v for k, v in insn.fields.items() if k not in flags}))
    with pytest.raises(VdlaError, match="race"):
        vdla_sim.simulate(builder.build(add_finish=False))


def test_fold_uses_noops_when_flags_are_taken():
    gemm = Op(isa.Insn("GEMM"), tag="gemm")
    store = Op(isa.Insn("STORE", memory_type=MT["out"], y_size=1, x_size=1))
    items = [Token("pop", "l2c", "compute"), Token("pop", "l2c", "compute"), gemm,
             Token("push", "c2s", "compute"), Token("push", "c2s", "compute"), store, Token("push", "s2c", "store")]
    out = fold_tokens(items)
    assert [i.kind for i in out] == ["LOAD", "GEMM", "LOAD", "STORE"]
    assert out[0].mem == "uop" and out[0].x_size == 0 and out[0].pop_prev
    assert out[1].pop_prev and out[1].push_next and out[2].push_next and out[3].push_prev


def test_dependency_edges_never_cross():
    builder, per_thread = gemm_shr_program(3, 7, 4, 2, 1)
    ops = interleave(per_thread) + [Op(isa.Insn("FINISH"))]
    edges = dependencies(ops, builder.config)
    for queue in ("l2c", "c2l", "c2s", "s2c"):
        mine = [(p, c) for p, c, q in edges if q == queue]
        assert all(p1 < p2 and c1 < c2 for (p1, c1), (p2, c2) in zip(mine, mine[1:]))
        assert all(p < c for p, c in mine)


def test_interleave_round_robin_and_split():
    segs = [[Segment([Op(isa.Insn("GEMM"), tag=f"{t}{k}")]) for k in range(n)] for t, n in enumerate((2, 3))]
    assert [op.tag for op in interleave(segs)] == ["00", "10", "01", "11", "12"]
    assert split(list(range(5)), 2) == [[0, 2, 4], [1, 3]]
    assert partition(10, 3) == [(0, 3), (3, 3), (6, 3)]
