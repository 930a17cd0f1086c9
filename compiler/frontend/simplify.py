"""Exact rewrites of an imported graph (float semantics unchanged up to float32 rounding):

- a per-output-channel ``affine`` (BatchNormalization, Mul/Add/Sub/Div by a per-channel
  constant) whose input is a conv or dense used by nothing else is folded into its weights
  and bias (a linear layer over tokens' bias ``Add`` too, once the reshape below moved);
- two ``affine`` nodes in a row become one;
- a ``gather`` whose input is a ``gather`` or ``reshape`` used by nothing else, or only by
  other gathers, takes that node's input directly (index maps composed), so a chain of
  data-movement ops is one copy, and a copy split into parts (attention's Q, K and V per
  head) is one copy per part;
- a per-channel ``affine`` (and the ReLU/Clip after it) whose input is a channel ``concat``
  used by nothing else is applied to each of the concat's inputs (DenseNet's BatchNorm-ReLU
  after each concat): int8 then rounds each input once, at the concat's scale, instead of
  rounding it to the concat's step, through the affine and again through the ReLU;
- the reshape after a dense over tokens moves below the ReLU, Clip and last-axis affine nodes
  that follow it (element-wise on the last axis, they commute with it), so they fold or fuse
  into the dense as after a conv;
- two reshapes in a row become one, a reshape of a ``gather`` (a Transpose before a dense over
  channels-last pixels) is that gather with the new shape, and a reshape to its input's own
  shape goes;
- a scalar scale on a ``matmul``'s operand or product goes into its ``alpha``
  (``compiler.frontend.attention``);
- nodes whose outputs do not reach the graph output are dropped.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.attention import fold_matmul_scales
from compiler.frontend.graph import Graph, Node, fresh_name


def _per_channel(value: np.ndarray, rank: int, channels: int, axis: int) -> np.ndarray | None:
    """``value`` (broadcastable, rank ``rank``) as one number per channel of ``axis``, or None."""
    v = np.asarray(value, dtype=np.float64)
    v = v.reshape((1,) * (rank - v.ndim) + v.shape)
    if any(d != 1 for i, d in enumerate(v.shape) if i != axis):
        return None
    return np.broadcast_to(v.reshape(-1), (channels,)) if v.size in (1, channels) else None


def _fold_affine(node: Node, producer: Node, rank: int) -> bool:
    """Fold ``node`` (an affine on ``producer``'s output channels, axis 1 of a value of ``rank``
    axes) into ``producer``'s weight and bias; False (nothing changed) if it is not one number
    per channel."""
    w, b = producer.attrs["weight"], producer.attrs["bias"]
    axis = 1
    scale = _per_channel(node.attrs["scale"], rank, w.shape[0], axis)
    offset = _per_channel(node.attrs["offset"], rank, w.shape[0], axis)
    if scale is None or offset is None:
        return False
    shape = (-1,) + (1,) * (w.ndim - 1)
    producer.attrs["weight"] = (w.astype(np.float64) * scale.reshape(shape)).astype(np.float32)
    producer.attrs["bias"] = (b.astype(np.float64) * scale + offset).astype(np.float32)
    return True


SINKS_PAST_TOKENS = ("relu", "clip", "affine")   # element-wise ops that commute with a reshape keeping the last axis


def _sink_token_reshapes(graph: Graph) -> list[Node]:
    """The nodes of ``graph`` with each reshape that follows a dense and keeps its last axis
    (``dense (rows, O) -> reshape (..., O)``, a dense over tokens) moved below the chain of
    :data:`SINKS_PAST_TOKENS` nodes that read it alone (an affine only if it is one number per
    last-axis channel): ``op(reshape(d)) = reshape(op(d))``. ``graph.shapes`` gets the moved
    nodes' new output shapes under fresh value names."""
    nodes = list(graph.nodes)
    by_output = {n.output: n for n in nodes}
    readers: dict[str, list[Node]] = {}
    for n in nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    taken = set(graph.shapes) | {n.output for n in nodes}
    position = {id(n): k for k, n in enumerate(nodes)}   # swaps in place: linear time in the nodes
    for reshape in list(nodes):
        if reshape.op != "reshape" or reshape.output in graph.outputs:
            continue
        dense = by_output.get(reshape.inputs[0])
        flat = graph.shapes[reshape.inputs[0]]
        if dense is None or dense.op != "dense" or graph.shapes[reshape.output][-1] != flat[-1]:
            continue
        while True:
            users = readers.get(reshape.output, [])
            if len(users) != 1 or reshape.output in graph.outputs:
                break
            op = users[0]
            if op.op not in SINKS_PAST_TOKENS or op.inputs != [reshape.output]:
                break
            if op.op == "affine":   # on (rows, O) it must be one number per column
                rank = len(graph.shapes[reshape.output])
                columns = {k: _per_channel(op.attrs[k], rank, flat[-1], rank - 1) for k in ("scale", "offset")}
                if any(v is None for v in columns.values()):
                    break
                op.attrs.update({k: np.asarray(v, np.float32).reshape(1, -1) for k, v in columns.items()})
            moved = fresh_name(op.output + ".rows", taken)
            taken.add(moved)
            graph.shapes[moved] = flat
            final = op.output
            op.inputs, op.output = [reshape.inputs[0]], moved
            reshape.inputs, reshape.output = [moved], final
            by_output[moved], by_output[final] = op, reshape
            readers[moved] = [reshape]
            i, j = position[id(reshape)], position[id(op)]
            nodes[i], nodes[j] = op, reshape
            position[id(op)], position[id(reshape)] = i, j
    return nodes


def _drop_identity_reshapes(nodes: list[Node], graph: Graph) -> list[Node]:
    """``nodes`` without the reshapes that give their input its own shape (what is left of a
    dense over tokens feeding another: ``(rows, C) -> (..., C) -> (rows, C)`` composed), their
    readers reading the input instead; a graph output keeps its node."""
    alias = {}
    kept = []
    for n in nodes:
        n.inputs = [alias.get(i, i) for i in n.inputs]
        if n.op == "reshape" and n.output not in graph.outputs and \
                tuple(graph.shapes[n.inputs[0]]) == tuple(graph.shapes[n.output]):
            alias[n.output] = n.inputs[0]
            continue
        kept.append(n)
    return kept


def _compose(outer: Node, inner: Node, inner_shape) -> None:
    """Make ``outer`` (a gather) read ``inner``'s input directly."""
    index, fill = outer.attrs["index"], outer.attrs["fill"]
    if inner.op == "gather":
        inner_index, inner_fill = inner.attrs["index"], inner.attrs["fill"]
        picked = index >= 0
        safe = np.where(picked, index, 0)
        outer.attrs["index"] = np.where(picked, inner_index[safe], -1)
        outer.attrs["fill"] = np.where(picked, inner_fill[safe], fill).astype(np.float32)
    outer.inputs = list(inner.inputs)


def _split_affine(node: Node, concat: Node, act: Node | None, graph: Graph, shapes: dict) -> list[Node] | None:
    """``concat(affine_i(x_i))`` (each followed by ``act``) for ``act(affine(concat(x)))``, or None."""
    rank = len(graph.shapes[concat.output])
    if concat.attrs.get("axis") not in (1, 1 - rank) or rank < 2:
        return None
    channels = graph.shapes[concat.output][1]
    scale = _per_channel(node.attrs["scale"], rank, channels, 1)
    offset = _per_channel(node.attrs["offset"], rank, channels, 1)
    if scale is None or offset is None:
        return None
    nodes, parts, start = [], [], 0
    shape = (-1,) + (1,) * (rank - 2)
    for k, x in enumerate(concat.inputs):
        c = graph.shapes[x][1]
        out = fresh_name(f"{node.output}.part{k}", shapes)  # ``shapes`` holds every value's name
        nodes.append(Node(f"{node.name}.part{k}", "affine", [x], out,
                          {"scale": scale[start:start + c].reshape(shape).copy(),
                           "offset": offset[start:start + c].reshape(shape).copy()}))
        shapes[out] = graph.shapes[x]
        if act is not None:
            acted = fresh_name(f"{out}.act", shapes)
            nodes.append(Node(f"{act.name}.part{k}", act.op, [out], acted, dict(act.attrs)))
            out = acted
            shapes[out] = graph.shapes[x]
        parts.append(out)
        start += c
    last = act if act is not None else node
    nodes.append(Node(concat.name, "concat", parts, last.output, dict(concat.attrs)))
    return nodes


def _push_through_concats(graph: Graph, nodes: list[Node], shapes: dict) -> list[Node]:
    """Apply :func:`_split_affine` wherever it fits (each concat used only by the affine, the
    affine only by its activation, if any, and neither the graph output). One pass: time linear
    in the number of nodes."""
    by_output = {n.output: n for n in nodes}
    users: dict[str, list] = {}
    for n in nodes:
        for i in n.inputs:
            users.setdefault(i, []).append(n)
    out, drop = [], set()  # drop: ids of nodes replaced (a concat already in ``out``, an activation to come)
    for node in nodes:
        if id(node) in drop:
            continue
        concat = by_output.get(node.inputs[0]) if node.op == "affine" else None
        if concat is None or concat.op != "concat" or len(users.get(concat.output, [])) != 1 or \
                concat.output in graph.outputs:
            out.append(node)
            continue
        after = users.get(node.output, [])
        act = after[0] if len(after) == 1 and after[0].op in ("relu", "clip") and node.output not in graph.outputs else None
        new = _split_affine(node, concat, act, graph, shapes)
        if new is None:
            out.append(node)
            continue
        drop.add(id(concat))
        out.extend(new)
        if act is not None:
            drop.add(id(act))
    return [n for n in out if id(n) not in drop]


def simplify(graph: Graph) -> Graph:
    """``graph`` rewritten as the module says. Each rewrite only joins a node with the one
    producing its first input (when nothing else reads that), and never changes how often any
    other value is read, so one pass in topological order reaches what repeating the passes
    would: time linear in the number of nodes (a 40 k-node chain was quadratic, 28 s)."""
    graph = Graph(graph.name, graph.input, graph.outputs, fold_matmul_scales(graph), graph.shapes)
    nodes = _sink_token_reshapes(graph)
    by_output = {n.output: n for n in nodes}
    uses: dict[str, int] = {}
    readers: dict[str, list[Node]] = {}
    for n in nodes:
        for i in n.inputs:
            uses[i] = uses.get(i, 0) + 1
            readers.setdefault(i, []).append(n)
    gone = set()  # ids of the nodes merged away
    for node in nodes:
        while node.inputs:  # a gather reading a new producer may compose again
            producer = by_output.get(node.inputs[0])
            if producer is None or producer.output in graph.outputs:
                break
            if uses.get(producer.output, 0) > 1 and node.op == "gather" and producer.op in ("gather", "reshape") \
                    and all(r.op == "gather" for r in readers[producer.output]):
                # a copy read only by copies (attention's split into Q, K and V): each reader composes
                # it; the last one takes its place below, and nothing reads it any more
                _compose(node, producer, graph.shapes[producer.inputs[0]])
                uses[producer.output] -= 1
                uses[producer.inputs[0]] = uses.get(producer.inputs[0], 0) + 1
                readers.setdefault(producer.inputs[0], []).append(node)
                continue
            if uses.get(producer.output, 0) != 1:
                break
            if node.op == "gather" and producer.op in ("gather", "reshape"):
                _compose(node, producer, graph.shapes[producer.inputs[0]])
                del by_output[producer.output]
                gone.add(id(producer))
                continue
            if node.op == "affine" and producer.op in ("conv", "dense"):
                if not _fold_affine(node, producer, len(graph.shapes[producer.output])):
                    break
            elif node.op == "reshape" and producer.op == "reshape":   # two reshapes: one
                producer.attrs = dict(node.attrs)
            elif node.op == "reshape" and producer.op == "gather":   # a gather's flat picks in the new shape
                producer.attrs = {**producer.attrs, "shape": tuple(node.attrs["shape"])}
            elif node.op == "affine" and producer.op == "affine":
                scale = np.asarray(node.attrs["scale"], np.float64)
                producer.attrs["offset"] = np.asarray(producer.attrs["offset"], np.float64) * scale + node.attrs["offset"]
                producer.attrs["scale"] = np.asarray(producer.attrs["scale"], np.float64) * scale
            else:
                break
            del by_output[producer.output]  # the producer now writes the node's output; the node goes
            producer.output = node.output
            by_output[node.output] = producer
            gone.add(id(node))
            break
    nodes = _drop_identity_reshapes([n for n in nodes if id(n) not in gone], graph)
    shapes = dict(graph.shapes)
    nodes = _push_through_concats(graph, nodes, shapes)
    graph = Graph(graph.name, graph.input, graph.outputs, nodes, shapes)
    live, needed = [], set(graph.outputs)
    for node in reversed(nodes):
        if node.output in needed:
            live.append(node)
            needed.update(node.inputs)
    live.reverse()
    kept = {graph.input} | {n.output for n in live}
    shapes = {k: v for k, v in graph.shapes.items() if k in kept}
    return Graph(graph.name, graph.input, graph.outputs, live, shapes)
