"""Write docs/figures/layout-and-tiling.svg, for docs/compiler.md: (left) how an activation is
blocked, after ``compiler.layout.pack_activations`` itself: which INP element holds each channel,
row and column of an 8-channel 4x4 tensor on ``tiny`` (BLOCK 4); (right) how the conv of
examples/conv_tile.s is tiled, after its bundle's schedule (``th``, ``tw``, virtual threads): each
output tile, the thread that computes it, and the input rows it loads with their zero padding.
tests/docs/test_architecture.py fails when the picture is not what today's code draws. Run from
the repository root: .venv/bin/python scripts/figures/layouts.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PATH = ROOT / "docs" / "figures" / "layout-and-tiling.svg"
EXAMPLE = ROOT / "examples" / "conv_tile.s"


def schedule(text: str) -> dict:
    """The schedule string of a compiled bundle's meta (``th=2,tw=4,...``) as a dict."""
    return dict(item.split("=") for item in text.split(","))


def figure():
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib import pyplot as plt
    from matplotlib.patches import Rectangle

    from compiler.layout import pack_activations
    from vdla_hw.asm import assemble

    bundle = assemble(EXAMPLE.read_text(), source="examples/conv_tile.s")
    layer, sched = bundle.meta["layer"], schedule(bundle.meta["schedule"])
    block = bundle.config.block_in
    c, h, w = layer["ic"], layer["h"], layer["w"]
    # each value of the NCHW tensor is its own flat index; packing moves the values, not the labels
    nchw = np.arange(c * h * w).reshape(1, c, h, w)
    packed = pack_activations(nchw, bundle.config.batch, block, dtype=np.int64)   # (nb, cb, h, w, b, block)
    element = {int(v): (cb * h * w + y * w + x) for cb in range(packed.shape[1]) for y in range(h)
               for x in range(w) for v in packed[0, cb, y, x, 0]}
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.5, 1]})
    cmap = plt.get_cmap("tab20")
    for ch in range(c):
        for y in range(h):
            for x in range(w):
                e = element[ch * h * w + y * w + x]
                ox, oy = (ch % 4) * (w + 1), (c // 4 - 1 - ch // 4) * (h + 1.5)   # channels 0-3 on top
                left.add_patch(Rectangle((ox + x, oy + h - 1 - y), 1, 1, facecolor=cmap(e % 20), edgecolor="white"))
                left.text(ox + x + 0.5, oy + h - 0.5 - y, str(e), ha="center", va="center", fontsize=6)
            left.text(ox + w / 2, oy + h + 0.3, f"channel {ch}", ha="center", fontsize=7)
    left.set_xlim(-0.2, 4 * (w + 1))
    left.set_ylim(-0.2, (c // 4) * (h + 1.5))
    left.set_aspect("equal")
    left.axis("off")
    left.set_title(f"blocked layout: the INP element holding each value ({c} channels x {h}x{w}, BLOCK {block});\n"
                   f"channels {0}-{block - 1} of one pixel share an element", fontsize=8)
    th, tw, threads = int(sched["th"]), int(sched["tw"]), int(sched["vthreads"])
    k, pad = layer["k"], layer["pad"]
    tiles = [(ty, tx) for ty in range(0, h, th) for tx in range(0, w, tw)]
    for n, (ty, tx) in enumerate(tiles):
        thread = n % threads
        right.add_patch(Rectangle((tx, h - ty - th), tw, th, facecolor=cmap(2 * thread), alpha=0.6, edgecolor="black"))
        right.text(tx + tw / 2, h - ty - th / 2, f"tile {n}\nthread {thread}", ha="center", va="center", fontsize=8)
        # the input rows the tile reads: th + k - 1 rows from ty - pad, clipped, the rest zero padding
        top, bottom = ty - pad, ty + th - 1 - pad + k - 1
        right.add_patch(Rectangle((tx - pad + w + 2, h - bottom - 1), tw + k - 1, bottom - top + 1, fill=False,
                                  edgecolor=cmap(2 * thread), linewidth=2, linestyle="--"))
    right.add_patch(Rectangle((w + 2, 0), w, h, fill=False, edgecolor="black"))
    right.text(w / 2, h + 0.3, "output plane", ha="center", fontsize=8)
    right.text(w + 2 + w / 2, h + 0.3 + pad + 0.4, "input plane (dashed: each tile's rows, with padding)",
               ha="center", fontsize=7)
    right.set_xlim(-0.5, 2 * w + 2 + pad + 1)
    right.set_ylim(-pad - 1, h + pad + 1.5)
    right.set_aspect("equal")
    right.axis("off")
    right.set_title(f"tiling of examples/conv_tile.s ({k}x{k}, pad {pad}): th={th}, tw={tw}, "
                    f"{threads} virtual threads", fontsize=8)
    fig.tight_layout()
    return fig


def draw(path: Path) -> Path:
    from vdla.architecture import write_picture

    return write_picture(path, figure)


if __name__ == "__main__":
    print(f"wrote {draw(PATH).relative_to(ROOT)}", file=sys.stderr)
