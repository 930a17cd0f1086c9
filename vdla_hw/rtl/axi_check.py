"""A protocol checker for the test bench: watches the memory master's AXI channels and the
control slave's AXI-lite channels every cycle and counts the checks it makes and the rules
broken (never part of the FPGA build; ``vdla_hw.rtl.harness`` puts it beside the design).

Rules, by bit of ``rules`` (the OR of every rule broken so far):

* 0-9: on each AXI channel (AR, AW, W, R, B), VALID stays high until READY (even bits) and the
  payload stays stable while VALID waits (odd bits);
* 10: an AR/AW burst is longer than ``MEM_MAX_BURST`` (and than AXI3's 16 beats);
* 11: an AR/AW burst crosses a 4 kB boundary;
* 12: AxSIZE is not the full beat, AxBURST not INCR, or the address not beat aligned;
* 13: WLAST is not on the last beat of its AW burst (W beats are matched to AW bursts in order);
* 14: RLAST is not on the last beat of its AR burst;
* 15: a response without a request: an R beat with no read burst outstanding, a B with no
  completed write burst waiting for one;
* 16: more bursts in flight than the DMA's limit (``MEM_READ_OUTSTANDING`` /
  ``MEM_WRITE_OUTSTANDING``; read: AR taken, RLAST not yet; write: AW taken, B not yet);
* 20-29: on each AXI-lite channel (AW, W, B, AR, R), VALID held until READY (even) and payload
  stable (odd);
* 30: an AXI-lite response without a request.

``checks`` counts rule evaluations that had something to check (a VALID waiting, a handshake
to measure, a response to match). ``rd_out`` / ``wr_out`` are the bursts in flight, so a bench
can check that nothing is left outstanding when the device is idle.
"""

from __future__ import annotations

from myhdl import Signal, always_comb, always_seq, block, intbv

from vdla_hw.membus import BURST_BOUNDARY
from vdla_hw.rtl.axi import AXBURST_BITS, AXSIZE_BITS, BURST_INCR
from vdla_hw.rtl.axi_check_acc import accumulate
from vdla_hw.rtl.params import RtlParams, log2

RULES = {
    "ar_valid_held": 0, "ar_stable": 1, "aw_valid_held": 2, "aw_stable": 3, "w_valid_held": 4, "w_stable": 5,
    "r_valid_held": 6, "r_stable": 7, "b_valid_held": 8, "b_stable": 9, "burst_length": 10, "crosses_4k": 11,
    "size_burst_align": 12, "wlast_position": 13, "rlast_position": 14, "response_without_request": 15,
    "outstanding_limit": 16,
    "axil_aw_valid_held": 20, "axil_aw_stable": 21, "axil_w_valid_held": 22, "axil_w_stable": 23,
    "axil_b_valid_held": 24, "axil_b_stable": 25, "axil_ar_valid_held": 26, "axil_ar_stable": 27,
    "axil_r_valid_held": 28, "axil_r_stable": 29, "axil_response_without_request": 30,
}
AXI3_MAX_LEN = 16
# Widths of the checker's own counts (not the design's): the rules word and every group's flags
# (RULES: bits 0..30); the checks one rule group makes in a cycle (at most 15: the burst group);
# the checks and violations counters (wrapping); the burst-in-flight ports.
RULE_BITS = 32
GROUP_CHECK_BITS = 4
COUNT_BITS = 32
OUT_BITS = 16


def rule_names(mask: int) -> list[str]:
    return [name for name, bit in RULES.items() if mask >> bit & 1]


@block
def channel_check(clk, rst, valid, ready, payload, bit_held, bit_stable, flags, nchecks):
    """VALID held until READY and ``payload`` stable while waiting: ``flags`` gets the rule bits
    broken this cycle, ``nchecks`` the checks made (2 per waiting cycle)."""
    w_q = Signal(bool(0))
    p_q = Signal(intbv(0)[len(payload):])
    HELD, STABLE = 1 << bit_held, 1 << bit_stable

    @always_seq(clk.posedge, reset=rst)
    def seq():
        w_q.next = valid and not ready
        p_q.next = payload

    @always_comb
    def comb():
        flags.next = 0
        nchecks.next = 0
        if w_q:
            nchecks.next = 2
            if not valid:
                flags.next = HELD
            elif payload != p_q:
                flags.next = STABLE
    return seq, comb


class BurstTrack:
    """The checker's view of the memory master's bursts: this cycle's handshakes (``ar_fire`` ...
    ``b_fire``); AR bursts not ended by RLAST (``ar_n``, the head's length ``ar_head``) and the
    R beats of the head (``r_beats``); AW bursts and ended W bursts not yet matched in order
    (``aw_n`` / ``aw_head``, ``wb_n`` / ``wb_head``: its beats) and the W beats of the current
    one (``w_beats``); write bursts whose W ended and whose B has not come (``b_due``); bursts in
    flight (``rd_n``: AR taken, RLAST not yet; ``wr_n``: AW taken, B not yet); the AXI-lite write
    and read in flight (``lite_w`` / ``lite_r``). FIFOs of ``depth`` entries."""

    def __init__(self, len_bits: int, depth: int):
        cw = log2(depth) + 2
        self.depth = depth
        self.ar_fire, self.aw_fire, self.w_fire, self.r_fire, self.b_fire = (Signal(bool(0)) for _ in range(5))
        self.ar_n, self.aw_n, self.wb_n = (Signal(intbv(0)[cw:]) for _ in range(3))
        self.ar_head, self.aw_head = Signal(intbv(0)[len_bits:]), Signal(intbv(0)[len_bits:])
        self.wb_head = Signal(intbv(0)[len_bits + 1:])
        self.r_beats, self.w_beats = Signal(intbv(0)[len_bits + 1:]), Signal(intbv(0)[len_bits + 1:])
        self.b_due, self.rd_n, self.wr_n = (Signal(intbv(0)[cw + 2:]) for _ in range(3))
        self.lite_w, self.lite_r = Signal(bool(0)), Signal(bool(0))


@block
def axi_checker(clk, rst, p: RtlParams, m, s, checks, violations, rules, rd_out, wr_out):
    """``m``: an object with the AXI master's signals as attributes (araddr, arlen, arsize,
    arburst, arvalid, arready, rdata, rresp, rlast, rvalid, rready, awaddr, ..., bresp, bvalid,
    bready); ``s``: the AXI-lite slave's (awaddr, awvalid, awready, wdata, wstrb, wvalid, wready,
    bresp, bvalid, bready, araddr, arvalid, arready, rdata, rresp, rvalid, rready). Converted as
    a module of its own, these become ports ``m_araddr`` ... and ``s_awaddr`` ..."""
    c = p.config
    K_RD, K_WR = c.MEM_READ_OUTSTANDING, c.MEM_WRITE_OUTSTANDING
    insts = []
    names = ("ar", "aw", "w", "r", "b")
    payloads = {"ar": ("araddr", "arlen", "arsize", "arburst"), "aw": ("awaddr", "awlen", "awsize", "awburst"),
                "w": ("wdata", "wstrb", "wlast"), "r": ("rdata", "rresp", "rlast"), "b": ("bresp",)}
    lite = ("aw", "w", "b", "ar", "r")
    lite_payloads = {"aw": ("awaddr",), "w": ("wdata", "wstrb"), "b": ("bresp",), "ar": ("araddr",),
                     "r": ("rdata", "rresp")}
    flag_sigs, count_sigs = [], []

    watched = [(m, ch, payloads[ch], 2 * k) for k, ch in enumerate(names)]
    watched += [(s, ch, lite_payloads[ch], 20 + 2 * k) for k, ch in enumerate(lite)]
    for sigs, ch, fields, bit in watched:
        flag_sigs.append(Signal(intbv(0)[RULE_BITS:]))
        count_sigs.append(Signal(intbv(0)[GROUP_CHECK_BITS:]))
        insts.append(channel_check(clk, rst, getattr(sigs, ch + "valid"), getattr(sigs, ch + "ready"),
                                   _payload([getattr(sigs, x) for x in fields]), bit, bit + 1, flag_sigs[-1],
                                   count_sigs[-1]))

    # ---- burst rules and response matching -------------------------------------------------
    t = BurstTrack(len(m.arlen), 1 << log2(max(K_RD, K_WR) + 2))
    f_burst = Signal(intbv(0)[RULE_BITS:])
    n_burst = Signal(intbv(0)[GROUP_CHECK_BITS:])
    ar_flags, aw_flags = Signal(intbv(0)[RULE_BITS:]), Signal(intbv(0)[RULE_BITS:])
    ar_checks, aw_checks = Signal(intbv(0)[GROUP_CHECK_BITS:]), Signal(intbv(0)[GROUP_CHECK_BITS:])

    @always_comb
    def fires():
        t.ar_fire.next = m.arvalid and m.arready
        t.aw_fire.next = m.awvalid and m.awready
        t.w_fire.next = m.wvalid and m.wready
        t.r_fire.next = m.rvalid and m.rready
        t.b_fire.next = m.bvalid and m.bready
        rd_out.next = t.rd_n
        wr_out.next = t.wr_n

    insts.append(address_check(p, t.ar_fire, m.araddr, m.arlen, m.arsize, m.arburst, t.rd_n, K_RD, ar_flags,
                               ar_checks))
    insts.append(address_check(p, t.aw_fire, m.awaddr, m.awlen, m.awsize, m.awburst, t.wr_n, K_WR, aw_flags,
                               aw_checks))
    insts += [fires, read_track(clk, rst, m, t), write_track(clk, rst, m, t), lite_track(clk, rst, s, t),
              burst_rules(p, m, s, t, (ar_flags, aw_flags), (ar_checks, aw_checks), f_burst, n_burst)]
    insts.append(accumulate(clk, rst, flag_sigs + [f_burst], count_sigs + [n_burst], checks, violations, rules))
    return insts


@block
def burst_rules(p: RtlParams, m, s, t: BurstTrack, addr_flags, addr_checks, flags, nchecks):
    """Rules 13, 14 and 15 and the AXI-lite rule 30 in this cycle, with the address channels'
    ``addr_flags`` / ``addr_checks`` (AR, AW) folded in: ``flags`` / ``nchecks``."""
    MAXLEN = min(p.config.MEM_MAX_BURST, AXI3_MAX_LEN)
    E_WLAST, E_RLAST = 1 << RULES["wlast_position"], 1 << RULES["rlast_position"]
    E_RESP = 1 << RULES["response_without_request"]
    E_LRESP = 1 << RULES["axil_response_without_request"]
    ar_flags, aw_flags = addr_flags
    ar_checks, aw_checks = addr_checks

    @always_comb
    def comb():
        fl = intbv(0)[len(flags):]
        fl[:] = 0
        nc = intbv(0)[len(nchecks):]
        nc[:] = 0
        fl[:] = ar_flags | aw_flags
        nc[:] = ar_checks + aw_checks
        if t.r_fire:
            nc[:] = nc + 2
            if t.ar_n == 0:
                fl[:] = fl | E_RESP
            elif m.rlast != (t.r_beats == t.ar_head):
                fl[:] = fl | E_RLAST
        if t.w_fire:
            nc[:] = nc + 1
            if t.w_beats + 1 > MAXLEN and not m.wlast:
                fl[:] = fl | E_WLAST
        if t.wb_n != 0 and t.aw_n != 0:
            nc[:] = nc + 1
            if t.wb_head != t.aw_head + 1:
                fl[:] = fl | E_WLAST
        if t.b_fire:
            nc[:] = nc + 1
            if t.b_due == 0:
                fl[:] = fl | E_RESP
        if s.bvalid and s.bready:
            nc[:] = nc + 1
            if not t.lite_w:
                fl[:] = fl | E_LRESP
        if s.rvalid and s.rready:
            nc[:] = nc + 1
            if not t.lite_r:
                fl[:] = fl | E_LRESP
        flags.next = fl
        nchecks.next = nc
    return comb


@block
def read_track(clk, rst, m, t: BurstTrack):
    """Read bursts: AR lengths in order; R beats counted within the head burst."""
    ar_len_q = [Signal(intbv(0)[len(t.ar_head):]) for _ in range(t.depth)]
    ar_wp, ar_rp = (Signal(intbv(0)[log2(t.depth):]) for _ in range(2))
    MASK = t.depth - 1

    @always_comb
    def head():
        t.ar_head.next = ar_len_q[int(ar_rp)]

    @always_seq(clk.posedge, reset=rst)
    def track():
        if t.ar_fire:
            ar_len_q[int(ar_wp)].next = m.arlen
            ar_wp.next = (ar_wp + 1) & MASK
        if t.r_fire:
            if m.rlast:
                t.r_beats.next = 0
                if t.ar_n != 0:
                    ar_rp.next = (ar_rp + 1) & MASK
            else:
                t.r_beats.next = t.r_beats + 1
        a = intbv(0)[len(t.ar_n):]
        a[:] = t.ar_n
        if t.ar_fire:
            a[:] = a + 1
        if t.r_fire and m.rlast and t.ar_n != 0:
            a[:] = a - 1
        t.ar_n.next = a
        t.rd_n.next = a
    return head, track


@block
def write_track(clk, rst, m, t: BurstTrack):
    """Write bursts: AW lengths and completed W burst lengths, matched in order; B responses
    owed; bursts in flight."""
    aw_len_q = [Signal(intbv(0)[len(t.aw_head):]) for _ in range(t.depth)]
    wb_len_q = [Signal(intbv(0)[len(t.wb_head):]) for _ in range(t.depth)]
    aw_wp, aw_rp, wb_wp, wb_rp = (Signal(intbv(0)[log2(t.depth):]) for _ in range(4))
    MASK = t.depth - 1

    @always_comb
    def heads():
        t.aw_head.next = aw_len_q[int(aw_rp)]
        t.wb_head.next = wb_len_q[int(wb_rp)]

    @always_seq(clk.posedge, reset=rst)
    def track():
        if t.aw_fire:
            aw_len_q[int(aw_wp)].next = m.awlen
            aw_wp.next = (aw_wp + 1) & MASK
        wend = t.w_fire and m.wlast
        if t.w_fire:
            if m.wlast:
                t.w_beats.next = 0
                wb_len_q[int(wb_wp)].next = t.w_beats + 1
                wb_wp.next = (wb_wp + 1) & MASK
            else:
                t.w_beats.next = t.w_beats + 1
        match = t.wb_n != 0 and t.aw_n != 0
        if match:
            aw_rp.next = (aw_rp + 1) & MASK
            wb_rp.next = (wb_rp + 1) & MASK
        x = intbv(0)[len(t.aw_n):]
        x[:] = t.aw_n
        if t.aw_fire:
            x[:] = x + 1
        if match:
            x[:] = x - 1
        t.aw_n.next = x
        y = intbv(0)[len(t.wb_n):]
        y[:] = t.wb_n
        if wend:
            y[:] = y + 1
        if match:
            y[:] = y - 1
        t.wb_n.next = y
        z = intbv(0)[len(t.b_due):]
        z[:] = t.b_due
        if wend:
            z[:] = z + 1
        if t.b_fire and t.b_due != 0:
            z[:] = z - 1
        t.b_due.next = z
        o = intbv(0)[len(t.wr_n):]
        o[:] = t.wr_n
        if t.aw_fire:
            o[:] = o + 1
        if t.b_fire and t.wr_n != 0:
            o[:] = o - 1
        t.wr_n.next = o
    return heads, track


@block
def lite_track(clk, rst, s, t: BurstTrack):
    """AXI-lite: one write and one read in flight at most (the slave takes one at a time)."""

    @always_seq(clk.posedge, reset=rst)
    def track():
        if s.awvalid and s.awready:
            t.lite_w.next = 1
        elif s.bvalid and s.bready:
            t.lite_w.next = 0
        if s.arvalid and s.arready:
            t.lite_r.next = 1
        elif s.rvalid and s.rready:
            t.lite_r.next = 0
    return track


@block
def address_check(p: RtlParams, fire, addr, length, size, burst, inflight, limit: int, flags, nchecks):
    """Rules 10, 11, 12 and 16 on one address channel (AR or AW) in a handshake cycle: burst
    length, 4 kB crossing, size/type/alignment, bursts already in flight below ``limit``."""
    MAXLEN = min(p.config.MEM_MAX_BURST, AXI3_MAX_LEN)
    LGB, B = p.lgB, p.B
    E_LEN, E_4K, E_SIZE = 1 << RULES["burst_length"], 1 << RULES["crosses_4k"], 1 << RULES["size_burst_align"]
    E_OUT = 1 << RULES["outstanding_limit"]

    @always_comb
    def comb():
        fl = intbv(0)[len(flags):]
        fl[:] = 0
        nchecks.next = 0
        if fire:
            nchecks.next = 4
            if length + 1 > MAXLEN:
                fl[:] = fl | E_LEN
            if (addr & (BURST_BOUNDARY - 1)) + ((length + 1) << LGB) > BURST_BOUNDARY:
                fl[:] = fl | E_4K
            if size != LGB or burst != BURST_INCR or (addr & (B - 1)) != 0:
                fl[:] = fl | E_SIZE
            if inflight >= limit:
                fl[:] = fl | E_OUT
        flags.next = fl
    return comb


def _payload(sigs):
    """One signal holding ``sigs`` side by side (a payload to compare)."""
    from myhdl import ConcatSignal
    return sigs[0] if len(sigs) == 1 else ConcatSignal(*sigs)


class Ports:
    """Signals as attributes (a MyHDL interface: top-level ports ``<name>_<attribute>``)."""

    def __init__(self, **signals):
        self.__dict__.update(signals)


M_SIGNALS = ("araddr", "arlen", "arsize", "arburst", "arvalid", "arready", "rdata", "rresp", "rlast", "rvalid",
             "rready", "awaddr", "awlen", "awsize", "awburst", "awvalid", "awready", "wdata", "wstrb", "wlast",
             "wvalid", "wready", "bresp", "bvalid", "bready")
S_SIGNALS = ("awaddr", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready", "bresp", "bvalid", "bready",
             "araddr", "arvalid", "arready", "rdata", "rresp", "rvalid", "rready")


def checker_block(p: RtlParams):
    """The checker with its ports (``clk``, ``rst``, ``m_*``, ``s_*``, counts), as the harness
    connects it: AXI lengths 8 bits wide (the harness widens AXI3's), data widths from ``p``."""
    from myhdl import ResetSignal

    from vdla_hw.rtl.axi import AxiLite, AxiMaster

    widths = {}
    for intf, prefix in ((AxiMaster(p), "m"), (AxiLite(), "s")):
        for ch_name in intf.CHANNELS:
            ch = getattr(intf, ch_name)
            for field in ch.fields + ("valid", "ready"):
                widths[f"{prefix}_{ch_name}{field}"] = len(getattr(ch, field))
    widths.update(m_arsize=AXSIZE_BITS, m_awsize=AXSIZE_BITS, m_arburst=AXBURST_BITS, m_awburst=AXBURST_BITS)

    def sig(width):
        return Signal(bool(0)) if width == 1 else Signal(intbv(0)[width:])
    m = Ports(**{n: sig(widths["m_" + n]) for n in M_SIGNALS})
    s = Ports(**{n: sig(widths["s_" + n]) for n in S_SIGNALS})
    outs = [sig(w) for _, w in CHECK_OUTPUTS]
    return axi_checker(Signal(bool(0)), ResetSignal(0, active=1, isasync=False), p, m, s, *outs)


# the checker's counts, as ports: (name, width)
CHECK_OUTPUTS = (("checks", COUNT_BITS), ("violations", COUNT_BITS), ("rules", RULE_BITS), ("rd_out", OUT_BITS),
                 ("wr_out", OUT_BITS))
