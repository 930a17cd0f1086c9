"""ONNX LSTM and GRU graphs for the recurrent tests, built with onnx.helper: one recurrent node
(every attribute and optional input the unrolling takes), and torch's two-layer nn.LSTM as its
exporter writes it (LSTM, Squeeze of the direction axis, LSTM, Squeeze)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
GATES = {"LSTM": 4, "GRU": 3}


def _init(name: str, value: np.ndarray):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def weights(kind: str, dirs: int, inp: int, hidden: int, rng, prefix: str = "") -> list:
    """W, R, B initializers of a recurrent layer, uniform in +-1/sqrt(hidden) as torch draws them."""
    g, bound = GATES[kind] * hidden, hidden ** -0.5
    return [_init(f"{prefix}{what}", rng.uniform(-bound, bound, shape)) for what, shape in
            (("W", (dirs, g, inp)), ("R", (dirs, g, hidden)), ("B", (dirs, 2 * g)))]


def recurrent(kind: str = "LSTM", *, seq: int = 5, batch: int = 2, inp: int = 8, hidden: int = 16,
              direction: str = "forward", layout: int = 0, bias: bool = True, initial: str = "absent",
              outputs: tuple[str, ...] = ("Y", "Y_h", "Y_c"), seed: int = 0, **attrs):
    """A model of one ``kind`` node reading the graph input ``input``; ``initial`` "absent",
    "zeros" or "const" (a state equal for every batch row); ``outputs`` the node's outputs the
    graph returns (GRU has no Y_c)."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    inits = weights(kind, dirs, inp, hidden, rng)
    if not bias:
        inits = inits[:2]
    names = ["input", "W", "R", "B" if bias else ""]
    if initial != "absent":
        states = ("initial_h", "initial_c")[:1 if kind == "GRU" else 2]
        for s in states:
            row = rng.standard_normal(hidden) * 0.5 if initial == "const" else np.zeros(hidden)
            value = np.broadcast_to(row, (dirs, batch, hidden))
            inits.append(_init(s, value if layout == 0 else value.transpose(1, 0, 2)))
        names += [""] + list(states)
    kinds = ("Y", "Y_h", "Y_c")[:2 if kind == "GRU" else 3]
    node_out = [k if k in outputs else "" for k in kinds]
    while node_out and not node_out[-1]:
        node_out.pop()
    node = helper.make_node(kind, names, node_out, hidden_size=hidden, direction=direction, layout=layout, **attrs)
    x_shape = [seq, batch, inp] if layout == 0 else [batch, seq, inp]
    shapes = {"Y": [seq, dirs, batch, hidden] if layout == 0 else [batch, seq, dirs, hidden],
              "Y_h": [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]}
    shapes["Y_c"] = shapes["Y_h"]
    graph = helper.make_graph([node], kind.lower(), [helper.make_tensor_value_info("input", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def two_layer_lstm(*, seq: int = 16, batch: int = 1, inp: int = 64, hidden: int = 256, seed: int = 0):
    """torch.nn.LSTM(inp, hidden, num_layers=2) as torch.onnx.export (TorchScript) writes it:
    each layer an LSTM whose Y (T, 1, B, H) a Squeeze of axis 1 turns into the next layer's input,
    initial states zeros (folded constants), output the last layer's squeezed Y."""
    rng = np.random.default_rng(seed)
    inits, nodes, x = [], [], "input"
    for layer in range(2):
        inits += weights("LSTM", 1, inp if layer == 0 else hidden, hidden, rng, f"l{layer}.")
        zeros = _init(f"l{layer}.h0", np.zeros((1, batch, hidden)))
        inits.append(zeros)
        nodes.append(helper.make_node("LSTM", [x, f"l{layer}.W", f"l{layer}.R", f"l{layer}.B", "", f"l{layer}.h0",
                                               f"l{layer}.h0"], [f"l{layer}.Y", f"l{layer}.Y_h", f"l{layer}.Y_c"],
                                      hidden_size=hidden, name=f"/lstm/LSTM_{layer}"))
        inits.append(numpy_helper.from_array(np.asarray([1], np.int64), f"l{layer}.axis"))
        x = "output" if layer == 1 else f"l{layer}.squeezed"
        nodes.append(helper.make_node("Squeeze", [f"l{layer}.Y", f"l{layer}.axis"], [x]))
    graph = helper.make_graph(nodes, "lstm2", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [seq, batch, inp])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [seq, batch, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
