"""One error naming every node the importer refuses, grouped by reason, common patterns named.

The importer (``onnx_import._Importer.run``) tries every node and hands each refusal (node, op
type, reason) to :class:`Refusals`; at the end :meth:`Refusals.check` raises one
:class:`UnsupportedNodes` listing them all. A refused node's pattern is read from the graph's
structure (:func:`pattern`), never from names: ``SiLU: Mul(x, Sigmoid(x))``, a squeeze-excitation
or other gate ``Mul(x, Sigmoid(y))``, ``attention: MatMul of two computed tensors``, ``dilated
pooling (dilations [2, 2])``. The message groups the nodes by pattern (or reason), the largest group
first, with at most :data:`NAMES_SHOWN` names per group and :data:`GROUPS_SHOWN` groups, saying
how many more; :meth:`UnsupportedNodes.as_dict` (``vdla ... --json``) lists every node.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.frontend.graph import ModelError

NAMES_SHOWN = 5    # node names listed per group in the message
GROUPS_SHOWN = 8   # groups listed in the message (every one is in as_dict)
DOCS = "see docs/onnx.md for what is supported"
GATES = {"Sigmoid": "SiLU", "HardSigmoid": "HardSwish"}  # Mul(x, GATE(x)) is this activation
POOLS = ("GlobalAveragePool", "ReduceMean")
PASS_THROUGH = ("Identity", "Dropout", "Cast")
SE_DEPTH = 8       # nodes walked back from a gate's Sigmoid to find the pooling of a squeeze-excitation


@dataclass(frozen=True)
class Refused:
    node: str          # the node's name (or its first output's)
    op: str            # its ONNX op type
    reason: str        # why the importer cannot take it
    pattern: str | None = None  # the common pattern it is part of, from the graph's structure

    @property
    def group(self) -> str:
        return self.pattern or self.reason


def node_name(node) -> str:
    return node.name or (node.output[0] if node.output else "?")


class _Graph:
    """Producers of the values of an ONNX node list, through the nodes that only pass data on."""

    def __init__(self, nodes, consts):
        self.consts = consts
        self.producer = {out: n for n in nodes for out in n.output if out}

    def source(self, name: str) -> str:
        while (p := self.producer.get(name)) is not None and p.op_type in PASS_THROUGH and p.input:
            name = p.input[0]
        return name

    def made_by(self, name: str):
        return self.producer.get(self.source(name))

    def data_inputs(self, node) -> list[str]:
        return [self.source(n) for n in node.input if n and n not in self.consts]

    def reaches_pool_of(self, name: str, x: str) -> bool:
        """Whether ``name`` is computed from a global pooling of ``x`` through single-input nodes."""
        for _ in range(SE_DEPTH):
            node = self.made_by(name)
            if node is None:
                return False
            data = self.data_inputs(node)
            if node.op_type in POOLS:
                return data == [x]
            if len(data) != 1:
                return False
            name = data[0]
        return False


def _gate(graph: _Graph, node) -> str | None:
    data = graph.data_inputs(node)
    if len(data) != 2:
        return None
    for x, other in (data, data[::-1]):
        gate = graph.made_by(other)
        if gate is None or gate.op_type not in GATES:
            continue
        y = graph.data_inputs(gate)
        if y == [x]:
            return f"{GATES[gate.op_type]}: Mul(x, {gate.op_type}(x))"
        if y and graph.reaches_pool_of(y[0], x):
            return f"squeeze-excitation gate: Mul(x, {gate.op_type}(f(GlobalAveragePool(x))))"
        return f"gate: Mul(x, {gate.op_type}(y))"
    return None  # a product the importer takes but for its shapes: the reason says which


def pattern(node, graph: _Graph) -> str | None:
    """The common pattern a refused ``node`` is part of, read from the graph around it."""
    import onnx

    if node.op_type == "Mul":
        return _gate(graph, node)
    if node.op_type == "MatMul" and len(graph.data_inputs(node)) == 2:
        return "attention: MatMul of two computed tensors"
    if node.op_type in ("MaxPool", "AveragePool"):
        dilations = next((list(onnx.helper.get_attribute_value(a)) for a in node.attribute
                          if a.name == "dilations"), [])
        if any(d != 1 for d in dilations):
            return f"dilated pooling (dilations {dilations})"
    return None


class UnsupportedNodes(ModelError):
    """The nodes of a model the importer cannot take (``refused``: every one, in graph order)."""

    def __init__(self, where: str, refused: list[Refused]):
        self.refused = refused
        if len(refused) == 1:
            one = refused[0]
            why = f"{one.pattern}: {one.reason}" if one.pattern else one.reason
            super().__init__(where, f"{why}; {DOCS}", one.node, one.op)
        else:
            super().__init__(where, f"{len(refused)} nodes cannot be imported ({DOCS}): {summary(refused)}")

    def as_dict(self) -> dict:
        return {**super().as_dict(),
                "nodes": [{"name": r.node, "op": r.op, "reason": r.reason, "pattern": r.pattern} for r in self.refused],
                "groups": [{"group": key, "count": len(nodes), "nodes": [r.node for r in nodes]}
                           for key, nodes in groups(self.refused)]}


def groups(refused: list[Refused]) -> list[tuple[str, list[Refused]]]:
    """(pattern or reason, its nodes), the largest group first (ties: in graph order)."""
    by_group: dict[str, list[Refused]] = {}
    for r in refused:
        by_group.setdefault(r.group, []).append(r)
    return sorted(by_group.items(), key=lambda item: -len(item[1]))


def summary(refused: list[Refused]) -> str:
    """The groups of ``refused`` on one line: each group's pattern or reason, its count and at
    most NAMES_SHOWN node names; at most GROUPS_SHOWN groups, then how many more."""
    parts = []
    listed = groups(refused)
    for key, nodes in listed[:GROUPS_SHOWN]:
        shown = ", ".join(repr(r.node) for r in nodes[:NAMES_SHOWN])
        more = f" and {len(nodes) - NAMES_SHOWN} more" if len(nodes) > NAMES_SHOWN else ""
        parts.append(f"{key} ({len(nodes)} node{'s' if len(nodes) > 1 else ''}: {shown}{more})")
    rest = listed[GROUPS_SHOWN:]
    if rest:
        parts.append(f"and {len(rest)} more reasons ({sum(len(nodes) for _, nodes in rest)} nodes)")
    return "; ".join(parts)


class Refusals:
    """Collects the refusals of one import; :meth:`check` raises them as one error."""

    def __init__(self, nodes, consts):
        self.graph = _Graph(nodes, consts)
        self.refused: list[Refused] = []

    def add(self, node, reason: str) -> None:
        self.refused.append(Refused(node_name(node), node.op_type, reason, pattern(node, self.graph)))

    def check(self, where: str) -> None:
        if self.refused:
            raise UnsupportedNodes(where, self.refused)
