"""Generated figures of docs/asm.md: ``python scripts/figures/asm.py size`` prints the "Size"
section's paragraph (image and text sizes of two compiled ResNet-18 layers, disassembled by
vdla_hw.disasm; deterministic: the layers' tensors are the compiler's seeded random ones)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compiler.accel import compile_layer  # noqa: E402
from compiler.cpu_fallback.resnet18 import layer_table  # noqa: E402
from compiler.layers import Conv2D  # noqa: E402
from vdla_hw.disasm import disassemble  # noqa: E402

CONFIG = "vta-pynq"


def text_size(name: str) -> tuple[float, float, int, int]:
    """(image MB, text MB, `.bytes` rows, instructions) of ResNet-18's conv NAME compiled for CONFIG."""
    row = next(r for r in layer_table() if r["name"] == name)
    conv = Conv2D(name=name, h=row["H_in"], w=row["W_in"], ic=row["IC"], oc=row["OC"], k=row["K"],
                  stride=row["stride"], pad=row["pad"], shift=8, relu=True)
    bundle = compile_layer(conv, CONFIG)
    text = disassemble(bundle)
    rows = sum(line.startswith(".bytes") for line in text.splitlines())
    return bundle.dram.nbytes / 1e6, len(text) / 1e6, rows, bundle.insn_count


def size() -> str:
    big, big_text, rows, insns = text_size("layer4.0.conv2")
    small, small_text, _, _ = text_size("layer1.0.conv1")
    return (f"ResNet-18's `layer4.0.conv2` compiled for `{CONFIG}` (7x7 input, 512 to 512\n"
            f"channels; a {big:.1f} MB image, nearly all weights) disassembles to {big_text:.1f} MB of text "
            f"({rows:,} `.bytes`\nrows, {insns} instructions); `layer1.0.conv1` at 56x56 (a {small:.2f} MB image) "
            f"to {small_text:.2f} MB.")


BLOCKS = {"size": size}

if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
