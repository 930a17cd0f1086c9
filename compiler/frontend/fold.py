"""Constant folding and data-movement index maps, by running ONNX nodes in onnx's own reference
evaluator (``onnx.reference``), so no op's semantics are written again here.

- ``fold(model, shapes, opset)`` evaluates every node whose inputs are all constants (the
  initializers, ``Constant`` nodes, and the outputs of ``Shape``/``Size`` of a tensor whose
  shape inference made static); what is left is the network proper. This removes the dynamo
  exporter's shape arithmetic (``Shape -> Gather -> Concat -> Reshape``), ``Identity``'d
  initializers, ``Cast``/``CastLike`` of weights and the like.
- ``index_map(node, data, consts, shape, opset)`` says where each output element of a node that
  only moves data (Transpose, Gather, GatherND, Slice, Where with a constant condition, Pad, ...)
  comes from: the node is run on numbered inputs, once with ``+k`` and once with ``-k`` for the
  element numbered ``k``; an output that flips sign is a copy of element ``k``, one that does
  not is a constant. Any other outcome means the node computes, and it is refused.
  ``index_maps`` gives one map per output (Split).

Bounds (before anything is allocated; issue 45): :func:`fold` checks each node's outputs, with
the shapes onnx's shape inference gives, against :data:`vdla_hw.limits.MAX_TENSOR_BYTES` as
float32 before it evaluates the node or leaves it to the importer (:func:`check_outputs`): a
value computed from the network's input always, and a folded constant when it is larger than
every input it is computed from (a Transpose or Cast of a large weight is bounded by the model
file instead, ``MAX_MODEL_BYTES``). So a 120-byte ConstantOfShape, Expand, Pad, Tile or Resize
asking for gigabytes is one ModelError naming the node, not a request to numpy.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.graph import ModelError
from vdla_hw.limits import MAX_TENSOR_BYTES, mib

# Nodes evaluated when their inputs are constant, whatever the op; these never are (random).
NEVER_FOLD = ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli")
MAX_NUMBERED = 1 << 23  # numbered inputs stay exact in float32
# Output elements index_maps classifies at once: its float64 temporaries stay a few MiB however
# large the output (whole-output temporaries were 40 bytes per element, 1.3 GB for 32 M elements).
MAP_CHUNK = 1 << 18


def too_large(shape) -> int | None:
    """The float32 bytes of ``shape`` when they pass MAX_TENSOR_BYTES, else None."""
    nbytes = 4 * math.prod(int(d) for d in shape)
    return nbytes if nbytes > MAX_TENSOR_BYTES else None


def tensor_limit(name: str, shape, nbytes: int, kind: str = "value") -> str:
    """The refusal of a ``kind`` (a model's value, a graph's tensor) of ``shape`` needing ``nbytes``
    (:func:`too_large`): the one wording of MAX_TENSOR_BYTES's refusals."""
    return (f"{kind} {name!r} of shape {tuple(int(d) for d in shape)} needs {mib(nbytes)} as float32, more than "
            f"the {mib(MAX_TENSOR_BYTES)} limit (vdla_hw/limits.py MAX_TENSOR_BYTES)")


def check_sizes(graph, where: str):
    """``graph`` (the IR), or a ModelError naming its first tensor past MAX_TENSOR_BYTES (the bound
    :func:`check_outputs` applies to the model's values, here on what the import made of them)."""
    for name, shape in graph.shapes.items():
        if nbytes := too_large(shape):
            raise ModelError(where, tensor_limit(name, shape, nbytes, "tensor") + "; use a smaller input")
    return graph


def check_outputs(node, shapes: dict, consts: dict, where: str, opset: int | None = None) -> None:
    """Refuse ``node`` (before it is evaluated or imported) if an output whose shape onnx inferred
    passes MAX_TENSOR_BYTES: always for a value of the network, and for a constant (every input
    in ``consts``) only when it has more elements than each of its inputs. A constant without an
    inferred shape is sized from its inputs' values (:func:`_generated_shape`, then, given the
    ``opset``, :func:`node_shapes`: a Pad or Resize of a constant by computed pads or scales)."""
    inputs = [name for name in node.input if name]
    folded = all(name in consts for name in inputs)
    largest = max((np.asarray(consts[name]).size for name in inputs), default=0) if folded else 0
    alone = None
    for name in node.output:
        shape = shapes.get(name) or (_generated_shape(node, consts) if folded and name == node.output[0] else None)
        if shape is None and folded and opset is not None and name:
            alone = node_shapes(node, shapes, consts, opset) if alone is None else alone
            shape = alone.get(name)
        if shape is None:
            continue
        nbytes = too_large(shape)
        if nbytes is not None and not (folded and nbytes // 4 <= largest):
            raise ModelError(where, tensor_limit(name, shape, nbytes), node.name or name, node.op_type)


def _opset_of_op(op_type: str, opset: int) -> int:
    """``opset``, or ``op_type``'s first opset where the op is newer than it: a node the importer
    made from an exporter's pattern (``patterns.rewrite``: torch's decomposed GELU is a Gelu,
    opset 20, in a model of opset 17) is inferred at its own op's version."""
    import onnx

    try:
        onnx.defs.get_schema(op_type, opset)
        return opset
    except onnx.defs.SchemaError:
        try:
            return max(opset, onnx.defs.get_schema(op_type).since_version)
        except onnx.defs.SchemaError:
            return opset


SMALL_CONST = 1 << 12  # constants given to :func:`node_shapes` by value (pads, scales, sizes, shapes); larger ones by shape


def node_shapes(node, shapes: dict, consts: dict, opset: int) -> dict[str, tuple[int, ...]]:
    """The static output shapes onnx's shape inference gives ``node`` alone, its computed inputs
    of the ``shapes`` given (float32) and its constants from ``consts`` (by value up to
    :data:`SMALL_CONST` elements, else by type and shape): for a node whose shape the whole
    model's inference left open because an input (a Pad's pads, a Resize's scales or sizes) was
    computed by nodes its data propagation does not follow (Max, Add of initializers, ...) and
    folding has since made constant. No data is allocated, only the node's few small constants
    copied. Empty when an input's shape is unknown or onnx cannot infer or refuses the node."""
    import onnx
    from onnx import helper, numpy_helper

    inputs, inits = [], []
    for name in dict.fromkeys(n for n in node.input if n):
        if name in consts:
            value = np.asarray(consts[name])
            if value.size <= SMALL_CONST:
                inits.append(numpy_helper.from_array(value, name))
                continue
            kind, shape = helper.np_dtype_to_tensor_dtype(value.dtype), value.shape
        elif name in shapes:
            kind, shape = onnx.TensorProto.FLOAT, shapes[name]
        else:
            return {}
        inputs.append(helper.make_tensor_value_info(name, kind, [int(d) for d in shape]))
    outputs = [helper.make_value_info(name, onnx.TypeProto()) for name in node.output if name]
    model = helper.make_model(helper.make_graph([node], "node", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", _opset_of_op(node.op_type, opset))])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError):
        return {}
    found = {}
    for value in inferred.graph.output:
        tensor = value.type.tensor_type
        if tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            found[value.name] = tuple(int(d.dim_value) for d in tensor.shape.dim)
    return found


def _generated_shape(node, consts: dict) -> tuple[int, ...] | None:
    """The output shape of a folded node that makes a tensor larger than its inputs from their
    values (ConstantOfShape, Expand, Tile, Range), computed from those values, for when shape
    inference gave none (a shape computed by an op its data propagation does not follow, such as
    Max); None for any other op (its output is no larger than its inputs broadcast) or input
    values that are not of the op's form (the evaluator then reports them)."""
    try:
        values = [np.asarray(consts[name]) for name in node.input if name]
        if node.op_type == "ConstantOfShape":
            return tuple(int(d) for d in values[0].reshape(-1))
        if node.op_type == "Expand":
            return tuple(np.broadcast_shapes(values[0].shape, tuple(int(d) for d in values[1].reshape(-1))))
        if node.op_type == "Tile":
            return tuple(d * int(r) for d, r in zip(values[0].shape, values[1].reshape(-1)))
        if node.op_type == "Range":
            start, limit, delta = (float(v.reshape(-1)[0]) for v in values[:3])
            return (max(math.ceil((limit - start) / delta), 0),)
    except (ValueError, TypeError, IndexError, ZeroDivisionError, OverflowError):
        return None
    return None


def gather_elements(node, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """ONNX GatherElements, ``out[i][j] = data[index[i][j]][j]`` (axis 0; likewise for any axis),
    with numpy: onnx's reference evaluator fails on an axis of more than 32 entries whose index
    is shorter than the data (``np.choose``'s limit; BERT's position ids, 64 of 512, hit it)."""
    data, index = (np.asarray(feeds[name]) for name in node.input[:2])
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0) % data.ndim
    index = np.where(index < 0, index + data.shape[axis], index)
    # the index may be shorter than the data on the other axes too: those positions are read as is
    data = data[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(index.shape))]
    return [np.take_along_axis(data, index, axis)]


NUMPY_EVAL = {"GatherElements": gather_elements}  # ops whose onnx reference implementation is wrong


def evaluate(node, feeds: dict[str, np.ndarray], opset: int) -> list[np.ndarray]:
    if node.op_type in NUMPY_EVAL:
        return NUMPY_EVAL[node.op_type](node, feeds)
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)


def fold(model, shapes: dict[str, tuple[int, ...]], opset: int, where: str):
    """(constants, remaining nodes): constants maps value names to numpy arrays."""
    from onnx import numpy_helper

    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    remaining = []
    for node in model.graph.node:
        inputs = [name for name in node.input if name]
        if node.domain not in ("", "ai.onnx"):
            remaining.append(node)
            continue
        check_outputs(node, shapes, consts, where, opset)
        if node.op_type in ("Shape", "Size") and inputs and inputs[0] in shapes:
            shape = np.array(shapes[inputs[0]], dtype=np.int64)
            if node.op_type == "Size":
                consts[node.output[0]] = np.array(np.prod(shape), dtype=np.int64)
            else:
                attrs = {a.name: a.i for a in node.attribute}
                consts[node.output[0]] = shape[attrs.get("start", 0):attrs.get("end", len(shape))]
            continue
        if node.op_type not in NEVER_FOLD and all(name in consts for name in inputs):
            try:
                outputs = evaluate(node, {name: consts[name] for name in inputs}, opset)
            except Exception as err:  # the evaluator raises many types; the message names it
                raise ModelError(where, f"constant folding failed: {type(err).__name__}: {err}",
                                 node.name or node.output[0], node.op_type) from None
            for name, value in zip(node.output, outputs):
                if name:
                    consts[name] = np.asarray(value)
            continue
        remaining.append(node)
        if any(name and name not in shapes for name in node.output):
            _infer_alone(node, shapes, consts, opset, where)
    return consts, remaining


def _infer_alone(node, shapes: dict, consts: dict, opset: int, where: str) -> None:
    """Add to ``shapes`` the output shapes of a node left to the importer that the whole model's
    inference left open (a Pad by pads, a Reshape to a shape, computed by nodes onnx's data
    propagation does not follow) and that inference of the node alone gives now that folding has
    made those inputs constant (:func:`node_shapes`), so that a ``Shape`` of them folds in turn
    (torchvision's Swin pads and partitions windows by sizes read back with ``Shape``). Checked
    against MAX_TENSOR_BYTES like the whole model's shapes."""
    for name, shape in node_shapes(node, shapes, consts, opset).items():
        if name not in shapes:
            if nbytes := too_large(shape):
                raise ModelError(where, tensor_limit(name, shape, nbytes), node.name or name, node.op_type)
            shapes[name] = shape


def index_map(node, data: str, consts: dict, data_shape: tuple[int, ...], opset: int, where: str):
    """(index, fill, out_shape) of a data-movement node: out.flat[i] = x.flat[index[i]] or fill[i]."""
    return index_maps(node, data, consts, data_shape, opset, where)[0]


def index_maps(node, data: str, consts: dict, data_shape: tuple[int, ...], opset: int, where: str):
    """:func:`index_map` of each of a node's outputs (Split has several), from one pair of runs."""
    size = int(np.prod(data_shape))
    if size >= MAX_NUMBERED:
        raise ModelError(where, f"input of {size} elements is too large to map", node.name, node.op_type)
    numbered = np.arange(1, size + 1, dtype=np.float32).reshape(data_shape)
    feeds = {name: consts[name] for name in node.input if name and name != data}
    try:
        pluses = list(evaluate(node, {**feeds, data: numbered}, opset))
        minuses = list(evaluate(node, {**feeds, data: -numbered}, opset))
    except Exception as err:
        raise ModelError(where, f"cannot evaluate the node on numbered inputs: {type(err).__name__}: {err}",
                         node.name or node.output[0], node.op_type) from None
    maps = []
    for k in range(len(pluses)):
        plus, minus = np.asarray(pluses[k]), np.asarray(minuses[k])
        pluses[k] = minuses[k] = None  # the pair is held only while its map is made
        shape = tuple(int(d) for d in plus.shape)
        index, fill = np.empty(plus.size, np.int64), np.empty(plus.size, np.float32)
        plus, minus = plus.reshape(-1), minus.reshape(-1)
        for start in range(0, plus.size, MAP_CHUNK):  # float64 temporaries of one chunk at a time
            part = slice(start, start + MAP_CHUNK)
            if not _classify(plus[part], minus[part], index[part], fill[part]):
                raise ModelError(where, "the node computes new values from its input (it is not a pure copy or "
                                 "selection); this op is not supported here", node.name or node.output[0], node.op_type)
        del plus, minus
        maps.append((index, fill, shape))
    return maps


def _classify(plus: np.ndarray, minus: np.ndarray, index: np.ndarray, fill: np.ndarray) -> bool:
    """Fill ``index`` (the numbered input element each output copies, -1 for none) and ``fill``
    (the constant of the others, 0 for copies) from the outputs of the runs on ``+k`` and ``-k``;
    False if an output is neither a copy of a whole numbered element nor a constant."""
    plus, minus = plus.astype(np.float64), minus.astype(np.float64)
    copy = (plus == -minus) & (plus != 0)
    constant = plus == minus
    if not np.all(copy | constant) or np.any(np.abs(plus[copy]) != np.rint(np.abs(plus[copy]))):
        return False
    index[:] = np.where(copy, np.abs(plus) - 1, -1)
    fill[:] = np.where(copy, 0.0, plus)
    return True
