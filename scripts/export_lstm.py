#!/usr/bin/env python3
"""Export what today's torch makes of a 2-layer ``nn.LSTM`` and list each graph's ONNX ops (issue 28).

An optional helper: torch is not a dependency of the project or its tests (the tests build the
same op sequence with onnx.helper, tests/compiler/frontend/recurrent_graphs.py). Run it in a
scratch venv outside the repository that has torch and onnx::

    python scripts/export_lstm.py OUT_DIR [--seq 16] [--input 64] [--hidden 256]

writes ``OUT_DIR/lstm2.onnx`` (``nn.LSTM(input, hidden, num_layers=2)``, sequence-first, batch 1,
eval mode, the TorchScript exporter: ``dynamo=False, opset_version=17``) and
``OUT_DIR/lstm2_dynamo.onnx`` (the same module through ``dynamo=True``), and, TorchScript
exports of the same sizes, the sequence models a reviewer might hold out: ``gru2.onnx``
(``nn.GRU(input, hidden, num_layers=2)``), ``bilstm.onnx`` (one bidirectional ``nn.LSTM``
layer, output (seq, 1, 2 hidden)) and ``lstm_head.onnx`` (one ``nn.LSTM`` layer and an
``nn.Linear(hidden, 10)`` classifier of its last step); prints each op sequence without the
Constant nodes.
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

    class Recurrent(torch.nn.Module):
        def __init__(self, kind: str, head: bool = False, **options):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(args.input, args.hidden, **options)
            self.head = torch.nn.Linear(args.hidden, 10) if head else None

        def forward(self, x):
            y = self.rnn(x)[0]
            return y if self.head is None else self.head(y[-1])

    args.out.mkdir(parents=True, exist_ok=True)
    example = torch.randn(args.seq, 1, args.input)
    for name, dynamo, kind, options in (("lstm2", False, "LSTM", {"num_layers": 2}),
                                        ("lstm2_dynamo", True, "LSTM", {"num_layers": 2}),
                                        ("gru2", False, "GRU", {"num_layers": 2}),
                                        ("bilstm", False, "LSTM", {"bidirectional": True}),
                                        ("lstm_head", False, "LSTM", {"head": True})):
        torch.manual_seed(0)
        module = Recurrent(kind, **options).eval()
        path = args.out / f"{name}.onnx"
        torch.onnx.export(module, (example,), str(path), dynamo=dynamo, opset_version=17, input_names=["input"],
                          output_names=["output"])
        ops = op_sequence(path)
        print(f"{path}: {len(ops)} ops")
        print("  " + " ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
