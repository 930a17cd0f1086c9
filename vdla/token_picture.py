"""The token flow of a program: ``vdla sim B.npz --tokens FILE.svg|png|pdf``.

One lane per module (load, compute, store), each instruction a bar from the cycle it started to
the cycle it retired in the simulation, labelled with its index and kind; each token an arrow
from the instruction that pushed it (at its end) to the one that popped it (at its start). A
token queue is a FIFO between one pusher and one popper, each running its instructions in
program order, so the k-th push of a queue is the k-th pop of it (docs/spec.md section 1):
the arrows come from the instructions' flags, the bars from the simulator's retire times.
Only the first :data:`LIMIT` instructions are drawn (a picture of thousands would be a smear);
the title says so.
"""

from __future__ import annotations

from pathlib import Path

from vdla_hw import isa

LIMIT = 60
MODULES = ("load", "compute", "store")
COLOURS = {"LOAD": "#9ecae1", "GEMM": "#fdae6b", "ALU": "#a1d99b", "STORE": "#bcbddc", "FINISH": "#d9d9d9"}
TOKEN_COLOUR = "#b03a2e"


def token_pairs(insns: list[isa.Insn]) -> list[tuple[str, int, int]]:
    """(queue, pushing instruction, popping instruction) of every token of ``insns`` whose pop
    exists: the k-th push of a queue pairs with its k-th pop."""
    pushes: dict[str, list[int]] = {q: [] for q in isa.TOKEN_QUEUES}
    pops: dict[str, list[int]] = {q: [] for q in isa.TOKEN_QUEUES}
    for index, insn in enumerate(insns):
        for queue in isa.pushes(insn):
            pushes[queue].append(index)
        for queue in isa.pops(insn):
            pops[queue].append(index)
    return [(q, a, b) for q in isa.TOKEN_QUEUES for a, b in zip(pushes[q], pops[q])]


def figure(bundle, result, limit: int = LIMIT):
    """The matplotlib figure of ``bundle``'s first ``limit`` instructions as ``result`` (a
    ``vdla_sim`` SimResult) ran them."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch

    insns = bundle.insns()
    shown = range(min(limit, len(insns)))
    spans = {i: result.retire[i] for i in shown if result.retire[i]}   # i -> (module, start, end)
    lane = {m: k for k, m in enumerate(reversed(MODULES))}
    end = max((e for _, _, e in spans.values()), default=1)
    fig, ax = plt.subplots(figsize=(12, 3.6))
    for i, (module, start, stop) in spans.items():
        if module not in lane:
            continue
        kind = insns[i].kind
        ax.barh(lane[module], max(stop - start, 1), left=start, height=0.5, color=COLOURS.get(kind, "#eeeeee"),
                edgecolor="#555555", linewidth=0.6)
        ax.text(start + (stop - start) / 2, lane[module], f"{i}", ha="center", va="center", fontsize=6.5)
    for queue, a, b in token_pairs(insns):
        if a in spans and b in spans and spans[a][0] in lane and spans[b][0] in lane:
            (ma, _, ea), (mb, sb, _) = spans[a], spans[b]
            ax.annotate("", xy=(sb, lane[mb] + (0.25 if lane[mb] < lane[ma] else -0.25)),
                        xytext=(ea, lane[ma] + (-0.25 if lane[mb] < lane[ma] else 0.25)),
                        arrowprops={"arrowstyle": "->", "color": TOKEN_COLOUR, "linewidth": 0.8, "alpha": 0.8})
    ax.set_yticks([lane[m] for m in MODULES], MODULES)
    ax.set_ylim(-0.6, len(MODULES) - 0.4)
    ax.set_xlim(0, end * 1.01)
    ax.set_xlabel("cycle")
    more = f"; the first {len(shown)} of {len(insns)} instructions" if len(shown) < len(insns) else ""
    ax.set_title(f"token flow: {result.cycles:,} cycles on {bundle.config.name}{more} (bars: instructions by "
                 "index; red arrows: tokens, push to pop)", fontsize=9)
    ax.legend(handles=[Patch(facecolor=c, edgecolor="#555555", label=k) for k, c in COLOURS.items()]
              + [Patch(facecolor=TOKEN_COLOUR, label="token")], fontsize=7, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def draw(bundle, result, path, limit: int = LIMIT) -> Path:
    """Write the token-flow picture to ``path`` (SVG, PNG or PDF by its suffix), whole or not at all."""
    from vdla.architecture import write_picture

    return write_picture(path, lambda: figure(bundle, result, limit))
