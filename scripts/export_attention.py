#!/usr/bin/env python3
"""Export what today's torch makes of attention and list each graph's ONNX ops in order (issue 28).

An optional helper: torch is not a dependency of the project or its tests (the tests build the
same op sequences with onnx.helper, tests/compiler/frontend/exporter_graphs.py). Run it in a
scratch venv outside the repository that has torch and onnx::

    python scripts/export_attention.py OUT_DIR [--seq 64]

writes ``OUT_DIR/encoder_layer.onnx`` (``nn.TransformerEncoderLayer(d_model=256, nhead=4,
batch_first=True)``) and ``OUT_DIR/mha.onnx`` (a bare ``nn.MultiheadAttention(256, 4,
batch_first=True)`` as self-attention), both in eval mode, ``torch.onnx.export(..., dynamo=False,
opset_version=17)``, and prints their op sequences.
"""

import argparse
import sys
from pathlib import Path


def export(module, example, path: Path) -> None:
    import torch

    module.eval()
    # with gradients enabled (no torch.no_grad): in eval mode under no_grad torch takes its fused
    # fast path (aten::_transformer_encoder_layer_fwd), which has no ONNX export
    torch.onnx.export(module, example, str(path), dynamo=False, opset_version=17, input_names=["x"],
                      output_names=["y"])


def modules(d_model: int, heads: int) -> dict:
    """name -> module: the encoder layer and the bare self-attention, each called with its flags
    as Python values (traced directly, the encoder layer's ``is_causal`` became a tensor that
    ``scaled_dot_product_attention`` refuses)."""
    import torch

    class EncoderLayer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.TransformerEncoderLayer(d_model=d_model, nhead=heads, batch_first=True)

        def forward(self, x):
            return self.layer(x, is_causal=False)

    class SelfAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = torch.nn.MultiheadAttention(d_model, heads, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=False, is_causal=False)[0]

    return {"encoder_layer": EncoderLayer(), "mha": SelfAttention()}


def op_sequence(path: Path) -> list[str]:
    import onnx

    return [node.op_type for node in onnx.load(str(path)).graph.node]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    args = parser.parse_args(argv)
    import torch

    torch.manual_seed(0)
    args.out.mkdir(parents=True, exist_ok=True)
    example = torch.randn(1, args.seq, args.d_model)
    for name, module in modules(args.d_model, args.heads).items():
        path = args.out / f"{name}.onnx"
        export(module, (example,), path)
        ops = op_sequence(path)
        print(f"{path}: {len(ops)} ops")
        print("  " + " ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
