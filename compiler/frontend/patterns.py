"""Exporter patterns that spell one ONNX op with several, rewritten to that op before mapping.

Recognised from the graph's structure (never from node names), on the folded node list:

- ``Where(Greater(x, t), x, Softplus(x))``, torch's dynamo form of ``nn.Softplus`` (beta 1,
  threshold ``t``): ``Softplus(x)``. The two differ only above ``t``, by ``log1p(exp(-t))`` at
  most; it is taken for thresholds of at least :data:`MIN_THRESHOLD` (that bound below 1e-6).
- ``Div(x, Add(Abs(x), 1))`` (either order of the Add), torch's ``nn.Softsign``: ``Softsign(x)``.

The inner nodes go only when nothing else reads them. Any other Where, Greater, Abs or Div is
left as it is (and refused or mapped by the importer as before).
"""

from __future__ import annotations

import math

import numpy as np

MIN_THRESHOLD = 14.0  # log1p(exp(-14)) = 8.3e-7


def _scalar(consts: dict, name: str) -> float | None:
    value = consts.get(name)
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value).reshape(-1)[0])


def rewrite(nodes: list, consts: dict) -> list:
    """``nodes`` (onnx NodeProtos, topological) with the patterns above replaced."""
    import onnx

    producer = {out: n for n in nodes for out in n.output}
    readers: dict[str, int] = {}
    for n in nodes:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1
    drop, replace = set(), {}

    def only_reader(node) -> bool:
        return all(readers.get(out, 0) == 1 for out in node.output)

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
    return [replace.get(id(n), n) for n in nodes if id(n) not in drop]
