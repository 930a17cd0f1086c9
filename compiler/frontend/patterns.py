"""Exporter patterns that spell one ONNX op with several, rewritten to that op before mapping.

Recognised from the graph's structure (never from node names), on the folded node list:

- ``Where(Greater(x, t), x, Softplus(x))``, torch's dynamo form of ``nn.Softplus`` (beta 1,
  threshold ``t``): ``Softplus(x)``. The two differ only above ``t``, by ``log1p(exp(-t))`` at
  most; it is taken for thresholds of at least :data:`MIN_THRESHOLD` (that bound below 1e-6).
- ``Div(x, Add(Abs(x), 1))`` (either order of the Add), torch's ``nn.Softsign``: ``Softsign(x)``.
- torch's ``nn.GELU()`` as exported before ONNX's Gelu (opset 20): ``Erf(Div(x, sqrt 2))`` (or
  ``Erf(Mul(x, 1/sqrt 2))``), plus 1, times x and times 0.5 in either order (``Mul(Mul(x, e),
  0.5)``, ``Mul(Mul(x, 0.5), e)``, any operand order): ``Gelu(x)``. The constants must be those
  (sqrt 2 to float32 precision), else the nodes are left as they are.

- torch's ``nn.LayerNorm`` as exported before ONNX's LayerNormalization (opset 17):
  ``ReduceMean(x)``, ``d = Sub(x, mean)``, ``Pow(d, 2)`` (or ``Mul(d, d)``), ``ReduceMean``, ``Add``
  a constant epsilon, ``Sqrt``, ``Div(d, std)``, then optionally ``Mul`` by a constant gamma and
  ``Add`` of a constant beta (either operand order): ``LayerNormalization(x, gamma, beta)`` over
  the last axis. Both means must be over the same one axis, the last (-1, or its positive index
  where ``shapes`` gives the rank), keeping dimensions; ``d`` read by the square and the Div only.

The inner nodes go only when nothing else reads them. Any other Where, Greater, Abs or Div is
left as it is (and refused or mapped by the importer as before).
"""

from __future__ import annotations

import math

import numpy as np

MIN_THRESHOLD = 14.0  # log1p(exp(-14)) = 8.3e-7
SQRT2 = math.sqrt(2.0)


def _scalar(consts: dict, name: str) -> float | None:
    value = consts.get(name)
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value).reshape(-1)[0])


def rewrite(nodes: list, consts: dict, shapes: dict | None = None) -> list:
    """``nodes`` (onnx NodeProtos, topological) with the patterns above replaced (``shapes``: value
    name -> static shape, where known; a LayerNorm's gamma of one made for it goes into ``consts``)."""
    import onnx

    producer = {out: n for n in nodes for out in n.output}
    consumers: dict[str, list] = {}   # value -> the nodes reading it, once per read
    for n in nodes:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    drop, replace = set(), {}

    def only_reader(node) -> bool:
        return all(len(consumers.get(out, ())) == 1 for out in node.output)

    for node in nodes:
        if node.op_type == "Where" and len(node.input) == 3:
            cond, _, soft = (producer.get(name) for name in node.input)
            if cond is not None and soft is not None and cond.op_type == "Greater" and soft.op_type == "Softplus" \
                    and cond.input[0] == node.input[1] == soft.input[0] and only_reader(cond):
                threshold = _scalar(consts, cond.input[1])
                if threshold is not None and threshold >= MIN_THRESHOLD and math.isfinite(threshold):
                    drop.add(id(cond))
                    replace[id(node)] = onnx.helper.make_node("Identity", [node.input[2]], list(node.output),
                                                              name=node.name)
        if node.op_type == "Div" and len(node.input) == 2:
            add = producer.get(node.input[1])
            if add is None or add.op_type != "Add" or not only_reader(add):
                continue
            one = [i for i in add.input if _scalar(consts, i) == 1.0]
            other = [producer.get(i) for i in add.input if i not in one]
            if len(one) == 1 and len(other) == 1 and other[0] is not None and other[0].op_type == "Abs" \
                    and other[0].input[0] == node.input[0] and only_reader(other[0]):
                drop.update((id(add), id(other[0])))
                replace[id(node)] = onnx.helper.make_node("Softsign", [node.input[0]], list(node.output),
                                                          name=node.name)
        if node.op_type == "Erf" and len(node.input) == 1:
            found = _gelu(node, producer, consumers, consts)
            if found is not None:
                inner, last, x = found
                drop.update(id(n) for n in inner)
                replace[id(last)] = onnx.helper.make_node("Gelu", [x], list(last.output), name=last.name)
        if node.op_type == "Sqrt" and len(node.input) == 1:
            found = _layernorm(node, producer, consumers, consts, shapes or {})
            if found is not None:
                inner, last, x, gamma, beta, eps = found
                drop.update(id(n) for n in inner)
                if gamma is None:
                    gamma = _fresh(f"{last.output[0]}.gamma", consts, producer)
                    consts[gamma] = np.ones(1, np.float32)
                replace[id(last)] = onnx.helper.make_node("LayerNormalization", [x, gamma] + ([beta] if beta else []),
                                                          list(last.output), name=last.name, axis=-1, epsilon=eps)
    return [replace.get(id(n), n) for n in nodes if id(n) not in drop]


def _close(value: float | None, want: float) -> bool:
    return value is not None and abs(value - want) <= 1e-6 * abs(want)


def _gelu(erf, producer: dict, consumers: dict, consts: dict):
    """(inner nodes, last node, x) of a decomposed GELU around ``erf`` (``consumers``: value ->
    the nodes reading it, once per read), or None."""
    def only(name):   # the one node reading ``name``, when nothing else does
        users = consumers.get(name, [])
        return users[0] if len(users) == 1 else None

    def other(node, name):
        rest = [i for i in node.input if i != name]
        return rest[0] if len(node.input) == 2 and len(rest) == 1 else None

    scaled = producer.get(erf.input[0])
    if scaled is None or only(scaled.output[0]) is None or len(scaled.input) != 2:
        return None
    x = scaled.input[1] if scaled.op_type == "Mul" and scaled.input[0] in consts else scaled.input[0]
    if not ((scaled.op_type == "Div" and _close(_scalar(consts, scaled.input[1]), SQRT2)) or
            (scaled.op_type == "Mul" and _close(_scalar(consts, other(scaled, x) or ""), 1.0 / SQRT2))):
        return None
    plus = only(erf.output[0])
    if plus is None or plus.op_type != "Add" or not _close(_scalar(consts, other(plus, erf.output[0]) or ""), 1.0):
        return None
    times = only(plus.output[0])
    if times is None or times.op_type != "Mul":
        return None
    factor = other(times, plus.output[0])
    if factor == x:   # x * (1 + erf), then * 0.5
        half = only(times.output[0])
        if half is None or half.op_type != "Mul" or not _close(_scalar(consts, other(half, times.output[0]) or ""), 0.5):
            return None
        return [scaled, erf, plus, times], half, x
    halved = producer.get(factor or "")   # (x * 0.5) * (1 + erf)
    if halved is None or halved.op_type != "Mul" or only(halved.output[0]) is None or x not in halved.input \
            or not _close(_scalar(consts, other(halved, x) or ""), 0.5):
        return None
    return [scaled, erf, plus, halved], times, x


def _fresh(name: str, consts: dict, producer: dict) -> str:
    while name in consts or name in producer:
        name += "_"
    return name


def _mean_axis(node, consts: dict, shapes: dict) -> bool | None:
    """Whether ReduceMean ``node`` is a mean over the last axis of its input, keeping dimensions."""
    if node.op_type != "ReduceMean" or not node.input:
        return False
    attrs = {a.name: a for a in node.attribute}
    if "keepdims" in attrs and attrs["keepdims"].i == 0:
        return False
    if "axes" in attrs:
        axes = list(attrs["axes"].ints)
    elif len(node.input) > 1 and node.input[1] in consts:
        axes = np.asarray(consts[node.input[1]]).reshape(-1).tolist()
    else:
        return False
    rank = len(shapes[node.input[0]]) if node.input[0] in shapes else None
    return len(axes) == 1 and (axes[0] == -1 or (rank is not None and axes[0] == rank - 1))


def _layernorm(sqrt, producer: dict, consumers: dict, consts: dict, shapes: dict):
    """(inner nodes, last node, x, gamma or None, beta or None, epsilon) of a decomposed
    LayerNorm around ``sqrt``, or None."""
    def only(name):   # the one node reading ``name``, when nothing else does
        users = consumers.get(name, [])
        return users[0] if len(users) == 1 else None

    def const_other(node, name):   # the constant operand beside ``name``, one value or one per last-axis entry
        rest = [i for i in node.input if i != name]
        if len(node.input) != 2 or len(rest) != 1 or rest[0] not in consts:
            return None
        return rest[0] if all(d == 1 for d in np.shape(consts[rest[0]])[:-1]) else None

    plus = producer.get(sqrt.input[0])
    if plus is None or plus.op_type != "Add" or only(plus.output[0]) is None:
        return None
    var = next((producer.get(i) for i in plus.input if i not in consts), None)
    eps_name = const_other(plus, var.output[0]) if var is not None else None
    eps = _scalar(consts, eps_name) if eps_name else None
    if eps is None or not (math.isfinite(eps) and eps >= 0) or not _mean_axis(var, consts, shapes) \
            or only(var.output[0]) is None:
        return None
    square = producer.get(var.input[0])
    if square is None or only(square.output[0]) is None or len(square.input) != 2:
        return None
    if square.op_type == "Pow" and _scalar(consts, square.input[1]) == 2.0:
        sub = producer.get(square.input[0])
    elif square.op_type == "Mul" and square.input[0] == square.input[1]:
        sub = producer.get(square.input[0])
    else:
        return None
    if sub is None or sub.op_type != "Sub" or len(sub.input) != 2:
        return None
    x, mean = sub.input[0], producer.get(sub.input[1])
    if mean is None or mean.input[0] != x or not _mean_axis(mean, consts, shapes) or only(mean.output[0]) is None:
        return None
    div = only(sqrt.output[0])
    readers = consumers.get(sub.output[0], [])
    if div is None or div.op_type != "Div" or list(div.input) != [sub.output[0], sqrt.output[0]] \
            or {id(n) for n in readers} != {id(square), id(div)}:
        return None
    inner, last, gamma, beta = [mean, sub, square, var, plus, sqrt], div, None, None
    times = only(div.output[0])
    if times is not None and times.op_type == "Mul" and const_other(times, div.output[0]):
        inner.append(last)
        last, gamma = times, const_other(times, div.output[0])
    shifted = only(last.output[0])
    if shifted is not None and shifted.op_type == "Add" and const_other(shifted, last.output[0]):
        inner.append(last)
        last, beta = shifted, const_other(shifted, last.output[0])
    return inner, last, x, gamma, beta, eps
