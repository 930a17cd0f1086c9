"""The picture of one configuration's accelerator: ``vdla config draw``.

Every label comes from the configuration (:func:`labels`), so the picture of a preset or of a
user's JSON file is as true as ``vdla config show``: the four modules, the command queues from
fetch with their depth, the four token FIFOs with theirs, the five SRAMs with their size, depth
and element shape, the GEMM core and the ALU with their throughput, and the memory port with its
width, latency, outstanding transactions and bandwidth (docs/spec.md sections 1, 2 and 5).
"""

from __future__ import annotations

from pathlib import Path

from vdla_hw.config import Config

FORMATS = (".svg", ".png", ".pdf")
# module -> (x, y) of its box's lower-left corner, in the picture's own units (width 16)
MODULES = {"fetch": (0.5, 6.3), "load": (0.5, 3.6), "compute": (6.0, 3.6), "store": (11.5, 3.6)}
MODULE_W, MODULE_H = 4.0, 1.6
SRAM_H = 1.1
COLOURS = {"module": "#dbe9f6", "sram": "#fde9c9", "core": "#e2f0d9", "dram": "#eeeeee"}


def _kb(n_bytes: int) -> str:
    return f"{n_bytes / 1024:g} kB"


def _sram(config: Config, mem: str) -> str:
    shape = "x".join(map(str, config.elem_shape(mem)))
    width = {"uop": "", "inp": " int8", "wgt": " int8", "acc": " int32", "out": " int8"}[mem]
    return (f"{mem.upper()} {_kb(config.depth(mem) * config.elem_bytes(mem))}\n"
            f"{config.depth(mem):,} x\n[{shape}]{width}")


def labels(config: Config) -> dict[str, str]:
    """Every text of the picture, by the part it names; made from ``config`` only."""
    p = config.params
    macs = config.batch * config.block_in * config.block_out
    read = f"{p['MEM_READ_OUTSTANDING']} reads / {p['MEM_WRITE_OUTSTANDING']} writes outstanding"
    return {
        "title": f"{config.name}: {config.fingerprint}",
        "dram": (f"DRAM through {config.mem_port.upper()}: {8 * p['MEM_BYTES_PER_BEAT']}-bit AXI, bursts of "
                 f"{p['MEM_MAX_BURST']} beats, read latency {p['MEM_LATENCY']} cycles, {read}, "
                 f"{config.mem_bytes_per_s / 1e9:.2g} GB/s at {p['CLOCK_MHZ']:g} MHz"),
        "fetch": "fetch\nreads the instruction stream,\nroutes each instruction",
        "load": "load\nLOAD INP, WGT",
        "compute": "compute\nGEMM, ALU, FINISH,\nLOAD UOP, ACC",
        "store": "store\nSTORE OUT",
        "cmd_queue": f"command queue\n{p['CMD_QUEUE_DEPTH']} deep",
        "l2c": f"l2c ({p['TOKEN_QUEUE_DEPTH']})",
        "c2l": f"c2l ({p['TOKEN_QUEUE_DEPTH']})",
        "c2s": f"c2s ({p['TOKEN_QUEUE_DEPTH']})",
        "s2c": f"s2c ({p['TOKEN_QUEUE_DEPTH']})",
        **{f"sram_{mem}": _sram(config, mem) for mem in ("inp", "wgt", "uop", "acc", "out")},
        "gemm": (f"GEMM core {config.batch}x{config.block_in}x{config.block_out}\n{macs} MACs/cycle\n"
                 f"{config.peak_ops_per_s / 1e9:g} GOPS peak"),
        "alu": f"ALU {config.batch * config.block_out} lanes\n1 uop / {p['ALU_CYCLES_PER_UOP']} cycles",
    }


def figure(config: Config):
    """The matplotlib figure of ``config``'s accelerator (drawn, not saved)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    text = labels(config)
    fig, ax = plt.subplots(figsize=(12, 7.2))
    ax.set_xlim(0, 16)
    ax.set_ylim(-1.0, 9.4)
    ax.axis("off")
    ax.set_title(text["title"], fontsize=11)

    def box(x, y, w, h, label, kind, size=9):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", facecolor=COLOURS[kind],
                                    edgecolor="#555555", linewidth=1))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=size)

    def arrow(x0, y0, x1, y1, label=None, colour="#333333", dx=0.0, dy=0.12):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops={"arrowstyle": "->", "color": colour, "linewidth": 1.2})
        if label:
            ax.text((x0 + x1) / 2 + dx, (y0 + y1) / 2 + dy, label, ha="center", va="bottom", fontsize=7.5,
                    color=colour)

    box(0.5, 8.3, 15.0, 0.7, text["dram"], "dram", 8.5)
    for name, (x, y) in MODULES.items():
        box(x, y, MODULE_W, MODULE_H, text[name], "module")
    # fetch reads the instructions from DRAM and feeds the command queue of each module
    arrow(2.5, 8.25, 2.5, MODULES["fetch"][1] + MODULE_H + 0.08)
    for name in ("load", "compute", "store"):
        x, y = MODULES[name]
        arrow(4.55, 7.1, x + MODULE_W / 2, y + MODULE_H + 0.08, None, "#777777")
    ax.text(7.4, 6.55, text["cmd_queue"], fontsize=7.5, color="#555555", va="center")
    # token FIFOs between neighbours: the upper arrow goes right, the lower one left
    (lx, ly), (cx, cy), (sx, sy) = MODULES["load"], MODULES["compute"], MODULES["store"]
    tok = "#b03a2e"
    arrow(lx + MODULE_W + 0.08, ly + 1.15, cx - 0.08, cy + 1.15, text["l2c"], tok)
    arrow(cx - 0.08, cy + 0.45, lx + MODULE_W + 0.08, ly + 0.45, text["c2l"], tok, dy=-0.42)
    arrow(cx + MODULE_W + 0.08, cy + 1.15, sx - 0.08, sy + 1.15, text["c2s"], tok)
    arrow(sx - 0.08, sy + 0.45, cx + MODULE_W + 0.08, cy + 0.45, text["s2c"], tok, dy=-0.42)
    # each SRAM under the module that writes it; GEMM reads INP, WGT, UOP; ACC mirrors into OUT
    half = (MODULE_W - 0.1) / 2
    srams = {"inp": (lx, 2.0), "wgt": (lx + half + 0.1, 2.0), "uop": (cx, 2.0), "acc": (cx + half + 0.1, 2.0),
             "out": (sx + (MODULE_W - half) / 2, 2.0)}
    for mem, (x, y) in srams.items():
        box(x, y, half, SRAM_H, text[f"sram_{mem}"], "sram", 7)
        writer = "store" if mem == "out" else "load" if mem in ("inp", "wgt") else "compute"
        if mem == "out":   # store reads OUT
            arrow(x + half / 2, y + SRAM_H + 0.08, x + half / 2, sy - 0.08)
        else:
            arrow(x + half / 2, MODULES[writer][1] - 0.08, x + half / 2, y + SRAM_H + 0.08)
    arrow(cx + MODULE_W + 0.08, 2.45, srams["out"][0] - 0.08, 2.45, "mirror", "#333333")
    box(cx - 0.6, -0.2, 2.5, 1.1, text["gemm"], "core", 7)
    box(cx + 2.1, -0.2, 2.5, 1.1, text["alu"], "core", 7)
    arrow(lx + MODULE_W + 0.08, 2.2, cx - 0.65, 0.5, "inp, wgt", "#333333", dx=0.2, dy=-0.1)
    for x in (cx + 0.65, cx + 3.35):   # both cores read and write ACC (through the uops in UOP)
        ax.annotate("", xy=(srams["acc"][0] + half / 2, 1.92), xytext=(x, 0.98),
                    arrowprops={"arrowstyle": "<->", "color": "#333333", "linewidth": 1.0})
    ax.text(0.5, -0.85, "arrows: instructions (grey), tokens (red, FIFO depth in brackets), data (black); "
            "the memory port is shared by fetch, load, compute and store", fontsize=7.5, color="#555555")
    return fig


def picture_format(path: str | Path) -> str:
    """The suffix of a picture's ``path`` (``.svg``, ``.png`` or ``.pdf``); another is a one-line
    ``VdlaError`` naming it (a command checks this before its long work)."""
    fmt = Path(path).suffix.lower()
    if fmt not in FORMATS:
        from vdla_hw.errors import VdlaError

        raise VdlaError(f"{path}: the picture is written as {', '.join(FORMATS)}, not {fmt or 'no suffix'}")
    return fmt


def write_picture(path: str | Path, make_figure) -> Path:
    """Draw ``make_figure()`` (a matplotlib figure) into ``path``, whole or not at all: its suffix
    chooses SVG, PNG or PDF (another is one ``VdlaError``); the same bytes for the same drawing and
    matplotlib (no date, fixed SVG ids, SVG text kept as text). Returns ``path``."""
    import matplotlib
    from matplotlib import pyplot as plt

    from vdla.outputs import write_file

    path = Path(path)
    fmt = picture_format(path)
    with matplotlib.rc_context({"svg.hashsalt": "vdla", "svg.fonttype": "none"}):
        fig = make_figure()
        metadata = {"Date": None} if fmt == ".svg" else {"CreationDate": None} if fmt == ".pdf" else {}
        try:
            write_file(path, lambda f: fig.savefig(f, format=fmt[1:], metadata=metadata, dpi=110))
        finally:
            plt.close(fig)
    return path


def draw(config: Config, path: str | Path) -> Path:
    """Write ``config``'s picture to ``path`` (:func:`write_picture`); returns ``path``."""
    return write_picture(path, lambda: figure(config))
