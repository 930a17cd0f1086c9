#!/usr/bin/env python3
"""Write examples/conv_tile.s: a small conv2d compiled for `tiny` and disassembled with
annotations, so the example is always what today's compiler emits (tests/hw/test_examples.py
fails when it is not). Run from the repository root: .venv/bin/python scripts/make_examples.py"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vdla_hw.files import atomic_write  # noqa: E402

# the compile command the example shows, word for word (its schedule fits tiny's buffers)
CONV_TILE = ("compile conv2d --h 4 --w 4 --ic 8 --oc 8 --k 3 --pad 1 --shift 6 --relu --config tiny "
             "--schedule th=2,tw=4,toc=1,tic=1,vthreads=2 --seed 0")
HEADER = f"""\
# A compiled convolution, instruction by instruction: a 3x3 conv of an 8-channel 4x4 input to 8
# channels (padding 1, requantized by a right shift of 6, then ReLU), on `tiny` (BLOCK 4), in
# tiles of 2 output rows x 4 columns with 2 virtual threads. Made by scripts/make_examples.py:
#
#   vdla {CONV_TILE} -o conv.npz
#   vdla disasm --annotate conv.npz
#
# Read it for: the micro-op table (one entry per kernel tap and output pixel), each thread's
# input tile loaded with its zero padding, the GEMMs whose loops walk the taps, the ALU's bias,
# shift and clip, and how the two threads' tokens interleave so that one loads while the other
# computes. `vdla asm examples/conv_tile.s -o c.npz` gives conv.npz back, byte for byte.
"""


def conv_tile() -> str:
    """The text of examples/conv_tile.s."""
    import tempfile

    from vdla.cli import main
    from vdla_hw.bundle import Bundle
    from vdla_hw.disasm import disassemble

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "conv.npz"
        if main([*CONV_TILE.split(), "-o", str(out)]) != 0:
            raise SystemExit(f"vdla {CONV_TILE} failed")
        return HEADER + disassemble(Bundle.load(out), annotate=True)


if __name__ == "__main__":
    atomic_write(ROOT / "examples" / "conv_tile.s", conv_tile())
    print("wrote examples/conv_tile.s", file=sys.stderr)
