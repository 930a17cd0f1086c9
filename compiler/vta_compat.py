"""What the compiler may emit so that VTA's FPGA design computes the same result
(docs/spec.md, "Differences from VTA").

The one instruction the compiler emits whose meaning differs on VTA's bitstream is ALU SHR with
a large amount: VTA's HLS ALU (hardware/xilinx/src/vta.cc, ``alu``) takes the operand's low
``VTA_SHR_ARG_BIT_WIDTH`` = log2(32) = 5 bits as a *signed* ``ap_int<5>`` (vta.h,
``aluop_shr_arg_T``), so only amounts in [-16, 15] shift as ours do; 16..31 shift left by
32 - amount there, and ours shift right (docs/spec.md section 4). ``vdla compile`` refuses such a
``--shift`` unless ``--allow-vta-incompatible`` is given; ``vdla run`` and ``vdla deploy`` warn
about the accelerator ops whose quantization chose one (:func:`network_shift_warning`).
"""

from __future__ import annotations

import numpy as np

from vdla_hw.errors import VdlaError

# VTA's VTA_SHR_ARG_BIT_WIDTH (= VTA_LOG_ACC_WIDTH, hw_spec_const.h): 5 for its 32-bit accumulators,
# whatever our configuration says; SHR amounts that mean the same on VTA's HLS ALU as here are
# the values of a signed number of that many bits
VTA_SHR_ARG_BITS = 5
VTA_SHR_RANGE = (-(1 << (VTA_SHR_ARG_BITS - 1)), (1 << (VTA_SHR_ARG_BITS - 1)) - 1)
WHY = ("VTA's FPGA design (hardware/xilinx/src/vta.cc) reads an ALU shift amount as a signed 5-bit number, "
       "so amounts outside -16..15 shift the other way there")


def outside(amounts) -> list[int]:
    """The distinct SHR amounts of ``amounts`` (a number or an array) outside :data:`VTA_SHR_RANGE`."""
    values = np.unique(np.asarray(amounts, dtype=np.int64).reshape(-1))
    lo, hi = VTA_SHR_RANGE
    return [int(v) for v in values if not lo <= v <= hi]


def check_shift(shift: int, option: str = "--shift", allow: bool = False) -> None:
    """Refuse (VdlaError, one line) a requantization right shift VTA's bitstream would run
    differently, unless ``allow``."""
    if not allow and outside(shift):
        raise VdlaError(f"{option} {shift}: {WHY}; use {option} 0..{VTA_SHR_RANGE[1]}, or add "
                        "--allow-vta-incompatible to compile it anyway (the simulator and our RTL shift right, "
                        "docs/spec.md section 4)")


def node_shifts(node) -> list[int]:
    """The SHR amounts the accelerator's program for a quantized graph node uses: a conv or
    dense layer's requantization shift (one, or per channel), an add's input left shifts (as
    the negative amounts the ALU is given, compiler.network.alu_add) and its output shift."""
    a = node.attrs
    if node.op in ("conv", "dense") and "shift" in a:
        return [int(v) for v in np.asarray(a["shift"]).reshape(-1)]
    if node.op == "add" and "shift" in a:
        return [-int(a.get("a_shift", 0)), -int(a.get("b_shift", 0)), int(a["shift"])]
    return []


def network_shift_warning(nodes, placements: dict) -> str | None:
    """One warning line naming the accelerator-placed nodes whose SHR amounts VTA's bitstream
    would run differently, or None."""
    bad = []
    for node in nodes:
        place = placements.get(node.name)
        if place is not None and place.target == "vdla":
            amounts = outside(node_shifts(node))
            if amounts:
                bad.append(f"{node.name} ({', '.join(map(str, amounts))})")
    if not bad:
        return None
    return (f"warning: {len(bad)} accelerator op(s) shift by amounts outside {VTA_SHR_RANGE[0]}..{VTA_SHR_RANGE[1]}: "
            f"{', '.join(bad)}; {WHY}, so these programs would compute differently on VTA's bitstream "
            "(the simulator and our RTL follow docs/spec.md section 4)")
