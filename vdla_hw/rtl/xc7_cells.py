"""Timing models of the 7-series cells that yosys ``synth_xilinx`` emits, with the delays of
``xc7z020_timing.toml`` (every number there names its source).

A cell's model says, per pin ("PORT" = every bit of a port, "PORT[i]" = one bit):

* ``arcs``: combinational in -> out delays;
* ``launch``: clock-to-out delay of an output driven by a register of the cell (a path start);
* ``checks``: setup time of an input captured by a register of the cell (a path end);
* ``internal``: the longest register-to-register stage inside the cell (DSP48E1 pipelines).

Pins that are neither (clocks, unused) have no entry. Unknown cell types raise, so a netlist is
never timed with a silent gap."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from vdla_hw.errors import VdlaError

DATA = Path(__file__).with_name("xc7z020_timing.toml")

FLOPS = {"FDRE": ("R",), "FDSE": ("S",), "FDCE": ("CLR",), "FDPE": ("PRE",),
         "LDCE": ("CLR",), "LDPE": ("PRE",)}
LUTS = {f"LUT{n}": n for n in range(1, 7)}
BRAMS = ("RAMB18E1", "RAMB36E1")
# LUT-RAM: each output with the address port it is read through (asynchronously), the slice muxes a
# read goes through, the data-in ports, and the write-address ports. A read arc exists only from an
# output's own address: RAM32M's ADDRA reads DOA, not DOD; a dual-port RAM's DPRA reads DPO only.
_A5, _A6 = ("A0", "A1", "A2", "A3", "A4"), ("A0", "A1", "A2", "A3", "A4", "A5")
_DPRA5, _DPRA6 = tuple(f"DPRA{i}" for i in range(5)), tuple(f"DPRA{i}" for i in range(6))
_QUAD = {f"DO{x}": (f"ADDR{x}",) for x in "ABCD"}
LUTRAMS = {
    "RAM32M": (_QUAD, 0, ("DIA", "DIB", "DIC", "DID"), ("ADDRD",)),
    "RAM64M": (_QUAD, 0, ("DIA", "DIB", "DIC", "DID"), ("ADDRD",)),
    "RAM32X1D": ({"SPO": _A5, "DPO": _DPRA5}, 0, ("D",), _A5),
    "RAM64X1D": ({"SPO": _A6, "DPO": _DPRA6}, 0, ("D",), _A6),
    "RAM128X1D": ({"SPO": ("A",), "DPO": ("DPRA",)}, 1, ("D",), ("A",)),
    "RAM32X1S": ({"O": _A5}, 0, ("D",), _A5),
    "RAM64X1S": ({"O": _A6}, 0, ("D",), _A6),
    "RAM128X1S": ({"O": _A6 + ("A6",)}, 1, ("D",), _A6 + ("A6",)),
    "RAM256X1S": ({"O": ("A",)}, 2, ("D",), ("A",)),
}
SRLS = ("SRL16E", "SRLC32E")
PASS = ("BUFG", "BUFGCE", "BUFGCTRL", "IBUF", "OBUF", "IOBUF", "OBUFT", "GND", "VCC", "$scopeinfo",
        "$print", "$check")  # untimed ($print, $check: simulation-only $display / assertions)
DSP_CTRL = (("OPMODE", "OPMODEREG"), ("ALUMODE", "ALUMODEREG"), ("CARRYIN", "CARRYINREG"),
            ("CARRYINSEL", "CARRYINSELREG"), ("INMODE", "INMODEREG"))
DSP_OUT = ("P", "CARRYOUT", "PATTERNDETECT", "PATTERNBDETECT", "OVERFLOW", "UNDERFLOW", "MULTSIGNOUT",
           "CARRYCASCOUT")


@dataclass
class CellModel:
    arcs: list = field(default_factory=list)      # (in_pin, out_pin, ns)
    launch: dict = field(default_factory=dict)    # out_pin -> ns
    checks: dict = field(default_factory=dict)    # in_pin -> ns
    internal: float = 0.0


@lru_cache(maxsize=None)
def delays(path: str = str(DATA)) -> dict:
    """The delay table: ``{section: {name: ns}}`` (sources stay in the file)."""
    raw = tomllib.loads(Path(path).read_text())
    out = {}
    for sec, body in raw.items():
        if not isinstance(body, dict):
            continue
        out[sec] = {k: (v["ns"] if isinstance(v, dict) and "ns" in v else v) for k, v in body.items()}
    return out


def _param(params: dict, name: str, default: int | str = 0):
    """A yosys JSON parameter as int (binary string or number) or plain string."""
    v = params.get(name, default)
    if isinstance(v, str) and v and set(v) <= {"0", "1"}:
        return int(v, 2)
    if isinstance(v, str):
        return v.strip().strip('"')
    return v


def model(cell_type: str, params: dict, d: dict | None = None, conns: dict | None = None) -> CellModel:
    """Timing model of one cell of ``cell_type`` with yosys ``params`` (and its ``conns``, which tell a
    fixed-length shift register from an addressed one)."""
    d = d or delays()
    m = CellModel()
    if cell_type in LUTS:
        m.arcs = [(f"I{i}", "O", d["lut"]["i_to_o"]) for i in range(LUTS[cell_type])]
    elif cell_type == "INV":       # absorbed into a neighbouring LUT by Vivado (see the data file)
        m.arcs = [("I", "O", 0.0)]
    elif cell_type in ("MUXF7", "MUXF8"):
        t = d[cell_type.lower()]
        m.arcs = [("I0", "O", t["i_to_o"]), ("I1", "O", t["i_to_o"]), ("S", "O", t["s_to_o"])]
    elif cell_type == "CARRY4":
        for arc, ns in d["carry4"]["arcs"].items():
            src, dst = arc.split(">")
            m.arcs.append((_bit(src), _bit(dst), ns))
    elif cell_type in FLOPS:
        f = d["ff"]
        m.launch["Q"] = f["clk_to_q"]
        m.checks.update({"D": f["setup_d"], "CE": f["setup_ce"], "GE": f["setup_ce"]})
        m.checks.update({p: f["setup_sr"] for p in FLOPS[cell_type]})
    elif cell_type in BRAMS:
        _bram(m, params, d["bram"])
    elif cell_type == "DSP48E1":
        _dsp(m, params, d["dsp48e1"])
    elif cell_type in LUTRAMS:
        _lutram(m, cell_type, d)
    elif cell_type in SRLS:
        _srl(m, cell_type, conns or {}, d)
    elif cell_type not in PASS:
        raise VdlaError(f"timing: no model for cell type {cell_type} (vdla_hw/rtl/xc7_cells.py)")
    return m


def _bit(pin: str) -> str:
    """'CO3' -> 'CO[3]', 'CI' -> 'CI' (yosys CARRY4 ports CO, O, S, DI are 4 bits wide)."""
    head = pin.rstrip("0123456789")
    return f"{head}[{pin[len(head):]}]" if head != pin else pin


def _srl(m: CellModel, cell_type: str, conns: dict, d: dict) -> None:
    """SRL16E/SRLC32E. A fixed-length one (every address bit a constant) is a delay line: Vivado's
    synthesis keeps its last stage in the slice flip-flop (UG949, "Coding Shift Registers and Delay
    Lines"), so its output launches with the flip-flop's clock-to-Q and the SRL -> flip-flop stage
    stays inside the slice. An addressed SRL is read through its address like a LUT."""
    s = d["srl"]
    addr = ["A"] if cell_type == "SRLC32E" else ["A0", "A1", "A2", "A3"]
    fixed = all(not isinstance(b, int) for a in addr for b in conns.get(a, ["0"]))
    for q in ("Q", "Q31"):
        m.launch[q] = d["ff"]["clk_to_q"] if fixed and q == "Q" else s["clk_to_q"]
    if fixed:
        m.internal = s["clk_to_q"] + d["ff"]["setup_d"]
    else:
        m.arcs = [(a, "Q", d["lut"]["i_to_o"]) for a in addr]
    m.checks.update({"D": s["setup_d"], "CE": s["setup_ce"]})


def _bram(m: CellModel, params: dict, b: dict) -> None:
    sdp = _param(params, "RAM_MODE", "TDP") == "SDP"
    reg_a = _param(params, "DOA_REG", 0)
    reg_b = reg_a if sdp else _param(params, "DOB_REG", 0)
    for port, reg in (("DOADO", reg_a), ("DOPADOP", reg_a), ("DOBDO", reg_b), ("DOPBDOP", reg_b)):
        m.launch[port] = b["clk_to_do_reg"] if reg else b["clk_to_do"]
    for port in ("ADDRARDADDR", "ADDRBWRADDR"):
        m.checks[port] = b["setup_addr"]
    for port in ("DIADI", "DIBDI", "DIPADIP", "DIPBDIP"):
        m.checks[port] = b["setup_di"]
    for port in ("WEA", "WEBWE", "ENARDEN", "ENBWREN", "RSTRAMARSTRAM", "RSTRAMB", "RSTREGARSTREG",
                 "RSTREGB", "REGCEAREGCE", "REGCEB"):
        m.checks[port] = b["setup_ctrl"]


def _lutram(m: CellModel, cell_type: str, d: dict) -> None:
    reads, muxes, data, waddr = LUTRAMS[cell_type]
    read = d["lut"]["i_to_o"] + (d["muxf7"]["i_to_o"] if muxes >= 1 else 0) \
        + (d["muxf8"]["i_to_o"] if muxes >= 2 else 0)
    r = d["lutram"]
    for out, addr in reads.items():
        m.launch[out] = r["clk_to_o"]
        m.arcs += [(a, out, read) for a in addr]
    m.checks.update({p: r["setup_d"] for p in data})
    m.checks["WE"] = r["setup_we"]
    m.checks.update({a: r["setup_wa"] for a in waddr})


def _dsp(m: CellModel, params: dict, t: dict) -> None:
    """DSP48E1 by its register attributes and by whether it uses the pre-adder (USE_DPORT): A and D
    through the pre-adder take the _USE_DPORT_TRUE arcs, B and the inputs after the multiplier do
    not. Each input ends at the first register in front of it (its own, AD, M or P) or, with none,
    reaches P; each output launches from the last register before it."""
    areg, breg = _param(params, "AREG", 1), _param(params, "BREG", 1)
    creg, mreg, preg = _param(params, "CREG", 1), _param(params, "MREG", 1), _param(params, "PREG", 1)
    mult = _param(params, "USE_MULT", "MULTIPLY") != "NONE"
    dport = mult and _param(params, "USE_DPORT", "FALSE") == "TRUE"
    adreg = _param(params, "ADREG", 1) if dport else 0
    dreg = _param(params, "DREG", 1) if dport else 0
    inmodereg = _param(params, "INMODEREG", 1)
    if not mult:
        mreg = 0
    outs = DSP_OUT + ("PCOUT",)
    # outputs: launched by the last register before them
    for o in outs:
        if preg:
            m.launch[o] = t["clk_to_pcout_preg"] if o == "PCOUT" else t["clk_to_p_preg"]
        elif mreg:
            m.launch[o] = t["clk_to_p_mreg"]
        else:
            starts = [t["clk_to_p_breg"] if mult else t["clk_to_p_areg_nomult"]] if breg else []
            starts += [t["clk_to_p_creg"]] if creg else []
            if adreg:
                starts.append(t["dport_clk_to_p_adreg"])
            else:
                if areg:
                    starts.append(t["dport_clk_to_p_areg"] if dport else
                                  t["clk_to_p_areg"] if mult else t["clk_to_p_areg_nomult"])
                if dreg:
                    starts.append(t["dport_clk_to_p_dreg"])
            if starts:
                m.launch[o] = max(starts)
    # A (and ACIN), D: own register, AD register (pre-adder), M register, P register, or through to P
    a_path = (("setup_a_areg" if areg else None), "dport_setup_a_adreg", "dport_setup_a_mreg",
              "dport_setup_a_preg", "dport_a_to_p") if dport else \
        (("setup_a_areg" if areg else None), None, "setup_a_mreg", "setup_a_preg", "a_to_p")
    _dsp_front(m, t, ("A", "ACIN"), a_path, adreg, mreg, preg, mult, outs)
    if dport:
        _dsp_front(m, t, ("D",), ("dport_setup_d_dreg" if dreg else None, "dport_setup_d_adreg",
                                  "dport_setup_d_mreg", "dport_setup_d_preg", "dport_d_to_p"),
                   adreg, mreg, preg, mult, outs)
    _dsp_front(m, t, ("B", "BCIN"), ("setup_b_breg" if breg else None, None, "setup_b_mreg", "setup_b_preg",
                                     "b_to_p"), 0, mreg, preg, mult, outs)
    if mult:   # INMODE steers the multiplier's inputs (and the pre-adder): timed like A
        inmode = (("setup_ctrl_reg" if inmodereg else None), "dport_setup_inmode_adreg", "dport_setup_inmode_mreg",
                  "dport_setup_inmode_preg", "dport_inmode_to_p") if dport else \
            (("setup_ctrl_reg" if inmodereg else None), None, "setup_inmode_mreg", "setup_inmode_preg", "inmode_to_p")
        _dsp_front(m, t, ("INMODE",), inmode, adreg, mreg, preg, mult, outs)
    _dsp_late(m, t, creg, preg, "C", "setup_c_creg", "setup_c_preg", "c_to_p", outs)
    _dsp_late(m, t, 0, preg, "PCIN", None, "setup_pcin_preg", "pcin_to_p", outs)
    for pin, regname in DSP_CTRL:
        if pin == "INMODE" and mult:
            continue
        _dsp_late(m, t, _param(params, regname, 1), preg, pin, "setup_ctrl_reg", "setup_ctrl_preg",
                  "ctrl_to_p", outs)
    for pin in ("CEA1", "CEA2", "CEB1", "CEB2", "CEC", "CEM", "CEP", "CEAD", "CED", "CECTRL", "CEALUMODE",
                "CEINMODE", "CECARRYIN", "RSTA", "RSTB", "RSTC", "RSTM", "RSTP", "RSTD", "RSTCTRL",
                "RSTALUMODE", "RSTINMODE", "RSTALLCARRYIN"):
        m.checks[pin] = t["setup_ce_rst"]
    # register-to-register stages inside the slice (upper bounds, see the data file)
    stages = []
    if dport and (areg or dreg) and adreg:
        stages.append(t["dport_setup_a_adreg"])
    if dport and (areg or dreg) and not adreg:
        stages.append(t["dport_setup_a_mreg"] if mreg else t["dport_setup_a_preg"] if preg else 0.0)
    if adreg:
        stages.append(t["setup_a_mreg"] if mreg else t["setup_a_preg"] if preg else 0.0)
    if ((areg and not dport) or breg) and mreg:
        stages.append(t["setup_a_mreg"])
    if ((areg and not dport) or breg) and not mreg and preg:
        stages.append(t["setup_a_preg"] if mult else t["setup_a_preg_nomult"])
    if mreg and preg:
        stages.append(t["clk_to_p_mreg"])
    m.internal = max(stages, default=0.0)


def _dsp_front(m, t, pins, path, adreg, mreg, preg, mult, outs) -> None:
    """An input in front of the multiplier: ``path`` names the table entries of (own register,
    AD register, M register, P register, through to P); the first register present ends it."""
    own, to_ad, to_m, to_p, comb = path
    for pin in pins:
        if own:
            m.checks[pin] = t[own]
        elif to_ad and adreg:
            m.checks[pin] = t[to_ad]
        elif mreg:
            m.checks[pin] = t[to_m]
        elif preg:
            m.checks[pin] = t[to_p] if mult else t[to_p + "_nomult"]
        else:
            m.arcs += [(pin, o, t[comb] if mult else t[comb + "_nomult"]) for o in outs]


def _dsp_late(m, t, reg, preg, pin, sreg, spreg, comb, outs) -> None:
    """An input that joins after the multiplier (C, PCIN, control): own register, P register or P."""
    if reg and sreg:
        m.checks[pin] = t[sreg]
    elif preg:
        m.checks[pin] = t[spreg]
    else:
        m.arcs += [(pin, o, t[comb]) for o in outs]
