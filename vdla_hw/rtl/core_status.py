"""What the core reports (docs/rtl.md, "Blocks"): the retire trace for test benches, the one
ERROR report control latches (``error_merge``), and the per-module busy/stall counter
increments (vdla_sim's definitions). Named interfaces: control's :class:`CoreLink`, the
execution modules' :class:`ModuleCtl`, the memory port's :class:`PortClient` / :class:`PortError`,
the data movers' :class:`ErrReport`."""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw import isa, regmap
from vdla_hw.regmap import REG_BITS
from vdla_hw.rtl.axi import RESP_DECERR
from vdla_hw.rtl.control import CoreLink
from vdla_hw.rtl.core_queues import EXEC
from vdla_hw.rtl.memport import PortClient, PortError
from vdla_hw.rtl.params import RtlParams, arbitration_order


class RetireTrace:
    """The retire trace ports: in the cycle after module k of :data:`EXEC` retires an
    instruction, ``valid`` bit k is set with its index in ``index[k]`` and the retire cycle in
    ``cycle``; ``tog`` toggles at every cycle with a retire."""

    def __init__(self, valid, cycle, tog, index):
        self.valid, self.cycle, self.tog, self.index = valid, cycle, tog, tuple(index)


@block
def retire_trace(clk, rst, core: CoreLink, pushes, ctl: dict, trace: RetireTrace):
    """``core.rets``: fetch routes an instruction (one of ``pushes``) or a module retires one;
    the registered retire trace."""
    lv, cv, sv = (ctl[m].ret_valid for m in EXEC)
    li, ci, si = (ctl[m].ret_index for m in EXEC)
    r_fetch, r_load, r_comp, r_store = core.rets
    ql_push, qc_push, qs_push = pushes
    out_li, out_ci, out_si = trace.index
    cyc = core.cyc
    K_LOAD, K_COMPUTE, K_STORE = range(len(EXEC))
    assert K_LOAD == 0
    any_ret = Signal(bool(0))

    @always_comb
    def retires():
        any_ret.next = lv or cv or sv
        r_fetch.next = ql_push or qc_push or qs_push
        r_load.next = lv
        r_comp.next = cv
        r_store.next = sv

    @always_seq(clk.posedge, reset=rst)
    def registered():
        # the retire trace, one cycle late (registered outputs)
        trace.valid.next = (sv << K_STORE) | (cv << K_COMPUTE) | lv
        if any_ret:
            trace.tog.next = not trace.tog
            trace.cycle.next = cyc
            out_li.next = li
            out_ci.next = ci
            out_si.next = si
    return retires, registered


@block
def error_merge(core: CoreLink, errs: dict, perr: PortError, f_index, ctl: dict, overs: dict):
    """``core.err`` / ``core.err_insn`` from every source: fetch's errors (``errs["fetch"]``)
    first, then the LOAD/STORE range checks (``errs[module]``), an error response of the bus
    (naming the instruction whose transfer it belongs to; fetch: the first instruction of the
    chunk being read, ``f_index``), token overflow (``overs``: token FIFO name -> over)."""
    err_f, err_f_insn = errs["fetch"].bits, errs["fetch"].insn
    (rl, rli), (rc, rci), (rs, rsi) = ((errs[m].bits, errs[m].insn) for m in EXEC)
    li, ci, si = (ctl[m].ret_index for m in EXEC)
    o_l2c, o_c2l, o_c2s, o_s2c = (overs[n] for n in isa.TOKEN_QUEUES)
    # a token overflow names the pushing instruction: the index of the queue's producer
    i_l2c, i_c2l, i_c2s, i_s2c = (ctl[isa.TOKEN_ENDS[n][0]].ret_index for n in isa.TOKEN_QUEUES)
    core_err, core_err_insn = core.err, core.err_insn
    E_TOK = regmap.ERROR_BITS["token_overflow"]
    E_SLV, E_DEC = regmap.ERROR_BITS["axi_slverr"], regmap.ERROR_BITS["axi_decerr"]
    K_STORE, K_COMPUTE, K_LOAD = (arbitration_order().index(m) for m in ("store", "compute", "load"))
    bus_bits = Signal(intbv(0)[REG_BITS:])
    bus_insn = Signal(intbv(0)[len(core_err_insn):])

    @always_comb
    def bus_error():
        bus_bits.next = 0
        if perr.valid:
            if perr.code == RESP_DECERR:
                bus_bits.next = E_DEC
            else:
                bus_bits.next = E_SLV
        if perr.owner == K_STORE:
            bus_insn.next = si
        elif perr.owner == K_COMPUTE:
            bus_insn.next = ci
        elif perr.owner == K_LOAD:
            bus_insn.next = li
        else:
            bus_insn.next = f_index

    @always_comb
    def errors():
        core_err.next = err_f | rl | rc | rs | bus_bits
        core_err_insn.next = err_f_insn
        if err_f == 0:
            if rl != 0:
                core_err_insn.next = rli
            elif rc != 0:
                core_err_insn.next = rci
            elif rs != 0:
                core_err_insn.next = rsi
            elif bus_bits != 0:
                core_err_insn.next = bus_insn
        if o_l2c or o_c2l:
            core_err.next = err_f | rl | rc | rs | bus_bits | E_TOK
            if o_l2c:
                core_err_insn.next = i_l2c
            else:
                core_err_insn.next = i_c2l
        elif o_c2s or o_s2c:
            core_err.next = err_f | rl | rc | rs | bus_bits | E_TOK
            if o_c2s:
                core_err_insn.next = i_c2s
            else:
                core_err_insn.next = i_s2c
    return bus_error, errors


@block
def counter_incs(clk, rst, p: RtlParams, core: CoreLink, clients: dict, pushes, f_qstall, ctl: dict):
    """What each busy/stall counter adds in a run cycle: busy = [start, retire) minus memory
    waits (fetch: FETCH_CYCLES_PER_INSN per routed instruction, one of ``pushes``, plus its port
    transactions), stall_mem = request to grant, stall_token = take to start, stall_queue =
    fetch held by a full command queue (``f_qstall``)."""
    incs = core.incs
    fc = clients["fetch"]
    insts = [fetch_count(clk, rst, p, fc, pushes, f_qstall,
                         *(incs[regmap.counter_name("fetch", n)] for n in ("busy", "stall_mem", "stall_queue")))]
    for m in EXEC:
        insts.append(module_count(ctl[m].active, ctl[m].tstall, clients[m],
                                  *(incs[regmap.counter_name(m, n)] for n in ("busy", "stall_token", "stall_mem"))))
    return insts


@block
def fetch_count(clk, rst, p: RtlParams, client: PortClient, pushes, qstall, busy_inc, mem_inc, queue_inc):
    """Fetch's counter increments (:func:`counter_incs`)."""
    STEP = p.config.FETCH_CYCLES_PER_INSN
    f_req, f_gnt, f_rel = client.req, client.grant, client.rel
    ql_push, qc_push, qs_push = pushes
    f_hold = Signal(bool(0))

    @always_seq(clk.posedge, reset=rst)
    def fhold():
        if f_gnt:
            f_hold.next = 1
        elif f_rel:
            f_hold.next = 0

    @always_comb
    def fcount():
        v = intbv(0)[len(busy_inc):]
        v[:] = 0
        if ql_push or qc_push or qs_push:
            v[:] = STEP
        if f_gnt or (f_hold and not f_rel):
            v[:] = v + 1
        busy_inc.next = v
        mem_inc.next = f_req and not f_gnt
        queue_inc.next = qstall
    return fhold, fcount


@block
def module_count(act, tst, client: PortClient, busy_inc, tok_inc, mem_inc):
    """A load/compute/store module's counter increments (:func:`counter_incs`)."""
    req, grant = client.req, client.grant

    @always_comb
    def cnt():
        mem_inc.next = req and not grant
        busy_inc.next = act and not (req and not grant)
        tok_inc.next = tst
    return cnt
