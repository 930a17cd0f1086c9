"""ONNX LSTM and GRU (opset 14 semantics) unrolled over their static sequence into the graph IR's
existing ops: matrix products as ``dense`` layers (the GEMM core), the element-wise rest as
``add``, ``mul``, ``sigmoid``/``tanh`` and ``affine`` (the CPU), the gate split and the stacking of
the outputs as ``gather``/``concat``/``reshape`` copies.

For a layer of D directions, G gate rows (LSTM 4H: i, o, f, c; GRU 3H: z, r, h) and T steps:

- one ``dense`` over all T x B rows of X makes every step's input product X.W^T + Wb at once
  (both directions in one weight of D x G rows), with the recurrent bias Rb folded into its
  bias wherever ONNX adds it outside a gate's product (GRU's linear_before_reset=1 keeps Rbh in
  the recurrent product, where r multiplies it);
- per step and direction, one ``dense`` of B rows makes H_{t-1}.R^T (GRU with
  linear_before_reset=0: one for z and r, one for h over r * H_{t-1}), a ``gather`` picks the
  step's rows of the input product, and the gates follow the ONNX equations;
- a state that is a constant (absent: zeros; a constant initial_h/initial_c equal for every
  batch row) is carried as a vector and folded: the first step's products by it are constants,
  added to or multiplying the computed side as an ``affine``.

Every ``dense`` made here carries ``recurrent=True`` (``compiler.network.partition``: offloaded by
rule, although a step's product has as few rows as a classifier). What ONNX allows and this
does not (peepholes, clip, other activations, input_forget, partial sequence_lens, initial
states that differ by batch row) is one ModelError naming the node.
"""

from __future__ import annotations

import numpy as np

from vdla_hw.limits import MAX_UNROLLED_STEPS, MAX_UNROLLED_WEIGHT_BYTES, mib

GATES = {"LSTM": 4, "GRU": 3}
ACTIVATIONS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh")}  # ONNX's defaults, the only ones taken
DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}
FUNCTIONS = {"sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "tanh": np.tanh}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class _Unroll:
    """The nodes of one LSTM/GRU node. A value is a name (computed) or a float64 vector (a
    constant, the same for every batch row); the helpers fold constants as they go."""

    def __init__(self, imp, node, batch: int):
        self.imp, self.node, self.batch = imp, node, batch
        self.base = node.name or node.output[0]

    def emit(self, what: str, op: str, inputs: list[str], shape, attrs: dict | None = None,
              output: str | None = None) -> str:
        out = output or self.imp.made_value(f"{self.node.output[0]}.{what}")
        self.imp.value_names.add(out)  # a given output's name too
        self.imp.add_node(self.node, f"{self.base}.{what}", op, inputs, out, shape, attrs)
        return out

    def width(self, x) -> int:
        return int(x.shape[-1]) if isinstance(x, np.ndarray) else int(self.imp.shapes[x][-1])

    def lin(self, what: str, x, w: np.ndarray, b: np.ndarray):
        """x.w^T + b: a recurrent ``dense`` on a computed x (``w`` a contiguous float32 array, shared
        by every step's node: passes replace a node's weight, never write into it), a constant on a
        constant one."""
        if isinstance(x, np.ndarray):
            return w.astype(np.float64) @ x + b
        return self.emit(what, "dense", [x], (self.batch, w.shape[0]),
                          {"weight": w, "bias": np.asarray(b, np.float32),
                           "recurrent": True})

    def _affine(self, what: str, x: str, scale, offset) -> str:
        scale, offset = (np.asarray(v, np.float64).reshape(1, -1) for v in (scale, offset))
        return self.emit(what, "affine", [x], self.imp.shapes[x], {"scale": scale, "offset": offset})

    def add(self, what: str, a, b):
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return a + b
        if isinstance(a, np.ndarray):
            a, b = b, a
        if isinstance(b, np.ndarray):
            return a if not b.any() else self._affine(what, a, np.ones(1), b)
        return self.emit(what, "add", [a, b], self.imp.shapes[a])

    def mul(self, what: str, a, b):
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return a * b
        if isinstance(a, np.ndarray):
            a, b = b, a
        if isinstance(b, np.ndarray):
            return np.zeros(self.width(a)) if not b.any() else self._affine(what, a, b, np.zeros(1))
        return self.emit(what, "mul", [a, b], self.imp.shapes[a])

    def one_minus(self, what: str, x):
        return 1.0 - x if isinstance(x, np.ndarray) else self._affine(what, x, -np.ones(1), np.ones(1))

    def act(self, what: str, fn: str, x):
        if isinstance(x, np.ndarray):
            return FUNCTIONS[fn](x)
        return self.emit(what, fn, [x], self.imp.shapes[x])

    def cols(self, what: str, x, lo: int, hi: int):
        """Columns lo..hi of a (B, K) value: a gather copy (a constant's slice)."""
        if isinstance(x, np.ndarray):
            return x[lo:hi]
        k = self.width(x)
        index = (np.arange(self.batch)[:, None] * k + np.arange(lo, hi)[None, :]).reshape(-1)
        return self.gather(what, x, index, (self.batch, hi - lo))

    def gather(self, what: str, x: str, index: np.ndarray, shape, output: str | None = None) -> str:
        index = np.asarray(index, np.int64).reshape(-1)
        if index.size == int(np.prod(self.imp.shapes[x])) and np.array_equal(index, np.arange(index.size)):
            return self.emit(what, "reshape", [x], shape, {"shape": tuple(shape)}, output)
        return self.emit(what, "gather", [x], shape, {"index": index, "fill": np.zeros(index.size, np.float32),
                                                      "shape": tuple(shape)}, output)

    def stack(self, what: str, parts: list[str], order: tuple[int, ...], split: tuple[int, ...], output: str):
        """``parts`` (each (B, H)) side by side as (B, K, H), K = prod(split), viewed as
        (B, *split, H) and transposed by ``order`` into ``output``."""
        hidden = self.width(parts[0])
        joined = parts[0] if len(parts) == 1 else self.emit(
            f"{what}.concat", "concat", parts, (self.batch, len(parts) * hidden), {"axis": 1})
        index = np.arange(self.batch * len(parts) * hidden).reshape((self.batch, *split, hidden)).transpose(order)
        self.gather(what, joined, index, index.shape, output)


def _const_state(imp, node, index: int, directions: int, batch: int, hidden: int, layout: int):
    """A constant initial_h/initial_c per direction as vectors (absent: zeros); refused when its
    rows differ by batch index."""
    if len(node.input) <= index or not node.input[index]:
        return [np.zeros(hidden)] * directions
    what = ("initial_h", "initial_c")[index - 5]
    if node.input[index] not in imp.consts:
        raise imp.fail(node, f"{what} must be a constant (a state computed by the network is not supported)")
    value = imp.const(node, node.input[index]).astype(np.float64)
    value = value if layout == 0 else value.transpose(1, 0, 2)  # (D, B, H)
    if value.shape != (directions, batch, hidden):
        raise imp.fail(node, f"{what} has shape {value.shape}, expected {(directions, batch, hidden)}")
    if np.any(value != value[:, :1]):
        raise imp.fail(node, f"{what} differs between batch rows; only a state equal for every row is supported")
    return [value[d, 0] for d in range(directions)]


def _check(imp, node, a: dict, kind: str, seq: int, batch: int) -> None:
    """One ModelError for what the unrolling does not take."""
    if kind == "LSTM" and len(node.input) > 7 and node.input[7]:
        raise imp.fail(node, "peephole weights (input P) are not supported")
    if "clip" in a:
        raise imp.fail(node, "cell clipping (attribute clip) is not supported")
    if a.get("input_forget", 0):
        raise imp.fail(node, "input_forget=1 (coupled input and forget gates) is not supported")
    directions = len(DIRECTIONS.get(_text(a.get("direction", "forward")), ()))
    if not directions:
        raise imp.fail(node, f"direction {_text(a['direction'])!r} is not one of {', '.join(DIRECTIONS)}")
    acts = tuple(_text(v) for v in a.get("activations", ACTIVATIONS[kind] * directions))
    if acts != ACTIVATIONS[kind] * directions or "activation_alpha" in a or "activation_beta" in a:
        raise imp.fail(node, f"activations {list(acts)} are not supported (only ONNX's defaults "
                       f"{list(ACTIVATIONS[kind])} per direction)")
    if a.get("layout", 0) not in (0, 1):
        raise imp.fail(node, f"layout {a['layout']} is not 0 or 1")
    if len(node.input) > 4 and node.input[4]:
        if node.input[4] not in imp.consts:
            raise imp.fail(node, "sequence_lens must be a constant (a dynamic sequence length is not supported)")
        lens = imp.const(node, node.input[4]).reshape(-1)
        if lens.size != batch or np.any(lens != seq):
            raise imp.fail(node, f"sequence_lens {lens.tolist()} are not all the full length {seq}; shorter "
                           "sequences are not supported")


def unroll(imp, node, a: dict) -> None:
    """``node`` (an ONNX LSTM or GRU) as graph nodes of ``imp`` (the ONNX importer), writing the
    node's Y, Y_h and Y_c (those it names)."""
    kind = node.op_type
    x = imp.tensor(node, node.input[0])
    shape = imp.shapes[x]
    if len(shape) != 3:
        raise imp.fail(node, f"input X has shape {shape}; a sequence of rank 3 is expected")
    layout = int(a.get("layout", 0))
    seq, batch = (shape[0], shape[1]) if layout == 0 else (shape[1], shape[0])
    _check(imp, node, a, kind, seq, batch)
    reverse = DIRECTIONS[_text(a.get("direction", "forward"))]
    dirs, hidden = len(reverse), int(a["hidden_size"])
    rows = GATES[kind] * hidden
    w, r = imp.weight(node, 1).astype(np.float64), imp.weight(node, 2)  # r float32: every step's dense shares it
    b = imp.weight(node, 3)
    b = np.zeros((dirs, 2 * rows)) if b is None else b.astype(np.float64)
    if w.shape != (dirs, rows, shape[2]) or r.shape != (dirs, rows, hidden) or b.shape != (dirs, 2 * rows):
        raise imp.fail(node, f"weights W {w.shape}, R {r.shape}, B {b.shape} do not match {dirs} direction(s), "
                       f"hidden_size {hidden} and input size {shape[2]}")
    if seq * dirs > MAX_UNROLLED_STEPS:
        raise imp.fail(node, f"{seq} steps x {dirs} direction(s) unroll into {seq * dirs} steps, more than the "
                       f"{MAX_UNROLLED_STEPS} limit (vdla_hw/limits.py MAX_UNROLLED_STEPS)")
    nbytes = (seq - 1) * dirs * r[0].size * 4
    if nbytes > MAX_UNROLLED_WEIGHT_BYTES:
        raise imp.fail(node, f"its recurrent weights copied for each of {seq - 1} steps x {dirs} direction(s) take "
                       f"{mib(nbytes)}, more than the {mib(MAX_UNROLLED_WEIGHT_BYTES)} limit "
                       "(vdla_hw/limits.py MAX_UNROLLED_WEIGHT_BYTES)")
    r.setflags(write=False)  # shared by every step's dense: a pass that wrote into one would change all
    lbr = kind == "GRU" and bool(a.get("linear_before_reset", 0))
    wb, rb = b[:, :rows], b[:, rows:]
    inside = np.zeros_like(rb)  # the recurrent bias that stays in the recurrent product
    if lbr:
        inside[:, 2 * hidden:] = rb[:, 2 * hidden:]
    u = _Unroll(imp, node, batch)
    flat = u.emit("rows", "reshape", [x], (seq * batch, shape[2]), {"shape": (seq * batch, shape[2])})
    xw = u.emit("input_product", "dense", [flat], (seq * batch, dirs * rows),
                 {"weight": w.reshape(dirs * rows, -1).astype(np.float32),
                  "bias": (wb + rb - inside).reshape(-1).astype(np.float32), "recurrent": True})
    h0 = _const_state(imp, node, 5, dirs, batch, hidden, layout)
    c0 = _const_state(imp, node, 6, dirs, batch, hidden, layout) if kind == "LSTM" else [None] * dirs
    ys, last_h, last_c = [], [], []
    for d, back in enumerate(reverse):
        h, c, by_time = h0[d], c0[d], [None] * seq
        for t in (range(seq - 1, -1, -1) if back else range(seq)):
            step = np.arange(batch) * seq + t if layout else t * batch + np.arange(batch)
            index = (step[:, None] * (dirs * rows) + d * rows + np.arange(rows)[None, :]).reshape(-1)
            xs = u.gather(f"{d}.{t}.x", xw, index, (batch, rows))
            p = f"{d}.{t}"
            if kind == "LSTM":
                pre = u.add(f"{p}.gates", xs, u.lin(f"{p}.recurrent", h, r[d], np.zeros(rows)))
                i, o, f = (u.act(f"{p}.{g}", "sigmoid", u.cols(f"{p}.{g}.pre", pre, k * hidden, (k + 1) * hidden))
                           for k, g in enumerate("iof"))
                g = u.act(f"{p}.g", "tanh", u.cols(f"{p}.g.pre", pre, 3 * hidden, rows))
                c = u.add(f"{p}.c", u.mul(f"{p}.fc", f, c), u.mul(f"{p}.ig", i, g))
                h = u.mul(f"{p}.h", o, u.act(f"{p}.tanh_c", "tanh", c))
            else:
                rec = u.lin(f"{p}.recurrent", h, r[d] if lbr else r[d, :2 * hidden],
                            inside[d] if lbr else np.zeros(2 * hidden))
                zr = u.add(f"{p}.zr", u.cols(f"{p}.zr.x", xs, 0, 2 * hidden),
                           u.cols(f"{p}.zr.h", rec, 0, 2 * hidden) if lbr else rec)
                z, rg = (u.act(f"{p}.{g}", "sigmoid", u.cols(f"{p}.{g}.pre", zr, k * hidden, (k + 1) * hidden))
                         for k, g in enumerate("zr"))
                if lbr:
                    hr = u.mul(f"{p}.r_rh", rg, u.cols(f"{p}.rh", rec, 2 * hidden, rows))
                else:
                    hr = u.lin(f"{p}.recurrent_h", u.mul(f"{p}.r_h", rg, h), r[d, 2 * hidden:], np.zeros(hidden))
                hh = u.act(f"{p}.hh", "tanh", u.add(f"{p}.hh.pre", u.cols(f"{p}.hh.x", xs, 2 * hidden, rows), hr))
                h = u.add(f"{p}.h", u.mul(f"{p}.zhh", u.one_minus(f"{p}.one_minus_z", z), hh), u.mul(f"{p}.zh", z, h))
            by_time[t] = h
        ys += by_time
        last_h.append(h)
        last_c.append(c)
    outs = list(node.output) + [""] * (3 - len(node.output))
    if outs[0]:   # Y: (T, D, B, H) or, layout 1, (B, T, D, H); the parts in order d * T + t
        u.stack("Y", ys, (2, 1, 0, 3) if layout == 0 else (0, 2, 1, 3), (dirs, seq), outs[0])
    for out, parts, what in ((outs[1], last_h, "Y_h"), (outs[2], last_c, "Y_c")):
        if out:       # (D, B, H) or, layout 1, (B, D, H)
            u.stack(what, parts, (1, 0, 2) if layout == 0 else (0, 1, 2), (dirs,), out)
