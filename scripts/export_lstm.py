#!/usr/bin/env python3
"""Export what today's torch makes of a 2-layer ``nn.LSTM`` and list each graph's ONNX ops (issue 28).

An optional helper: torch is not a dependency of the project or its tests (the tests build the
same op sequence with onnx.helper, tests/compiler/frontend/recurrent_graphs.py). Run it in a
scratch venv outside the repository that has torch and onnx::

    python scripts/export_lstm.py OUT_DIR [--seq 16] [--input 64] [--hidden 256]

writes ``OUT_DIR/lstm2.onnx`` (``nn.LSTM(input, hidden, num_layers=2)``, sequence-first, batch 1,
eval mode, the TorchScript exporter: ``dynamo=False, opset_version=17``) and
``OUT_DIR/lstm2_dynamo.onnx`` (the same module through ``dynamo=True``), and prints their op
sequences without the Constant nodes.
"""

import argparse
import sys
from pathlib import Path


def op_sequence(path: Path) -> list[str]:
    import onnx

    return [node.op_type for node in onnx.load(str(path)).graph.node if node.op_type != "Constant"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--input", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args(argv)
    import torch

    class TwoLayer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(args.input, args.hidden, num_layers=2)

        def forward(self, x):
            return self.lstm(x)[0]

    torch.manual_seed(0)
    args.out.mkdir(parents=True, exist_ok=True)
    module, example = TwoLayer().eval(), torch.randn(args.seq, 1, args.input)
    for name, dynamo in (("lstm2", False), ("lstm2_dynamo", True)):
        path = args.out / f"{name}.onnx"
        torch.onnx.export(module, (example,), str(path), dynamo=dynamo, opset_version=17, input_names=["input"],
                          output_names=["output"])
        ops = op_sequence(path)
        print(f"{path}: {len(ops)} ops")
        print("  " + " ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
