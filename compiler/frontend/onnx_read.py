"""Reading an ONNX file for import: external data, opset, the input shape, shape inference.

``read_model(path)`` loads the file and its external data (``.onnx.data`` beside it, as
``torch.onnx.export`` writes it), with one-line ModelErrors for a missing file, a missing data
file, a protobuf that is not a model. ``prepare(model, where, input_shape)`` fixes the input's
shape (dynamic dimensions need ``input_shape``; never a silent 1), checks the opset and runs
onnx's shape inference, so every value gets a static shape. :func:`upgraded` converts a model of
an opset below 13 to opset 13 with onnx's version converter first.

External data is read here, not by onnx (:func:`load_external`): per the ONNX spec a tensor's
``offset`` defaults to 0 and its ``length`` to the rest of the file, but a tensor can only hold
``prod(dims) * itemsize`` bytes, so exactly that many are read, after checking that a given
``length`` says the same, that the file (a regular file inside the model's folder) holds them
from ``offset`` on, and that neither one tensor nor the model's total passes
:data:`vdla_hw.limits.MAX_MODEL_BYTES`. Each defect is one ModelError naming the tensor and the
data file.

:func:`check_names` refuses a graph that names a value twice: two nodes writing one output, a
node writing a graph input or an initializer, an input or initializer declared twice (ONNX
graphs are in single static assignment form; onnx's checker does not look).
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path

from compiler.frontend.graph import ModelError
from vdla_hw.errors import FileRefused
from vdla_hw.files import read_checked
from vdla_hw.limits import MAX_MODEL_BYTES, MAX_MODEL_NODES, mib

OPSET_MIN, OPSET_MAX = 13, 21


def read_model(path: str | Path):
    import onnx
    from google.protobuf.message import DecodeError

    where = str(path)
    try:  # files.read_checked: a regular file (a FIFO must not hang the read) within the limit
        data = read_checked(path, "model file", MAX_MODEL_BYTES, "vdla_hw.limits.MAX_MODEL_BYTES")
    except FileRefused as err:
        raise ModelError(where, "no such file" if err.why == "no such model file" else err.why) from None
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, OSError, RuntimeError) as err:
        raise ModelError(where, f"not an ONNX model file ({type(err).__name__})") from None
    if not model.graph.node:
        raise ModelError(where, "not an ONNX model file (no graph nodes)")
    if len(model.graph.node) > MAX_MODEL_NODES:
        raise ModelError(where, f"{len(model.graph.node)} nodes, more than the {MAX_MODEL_NODES} a model may have "
                         "(vdla_hw/limits.py MAX_MODEL_NODES)")
    load_external(model, where, Path(path).resolve().parent)
    return model


def _tensors(graph, where: str = ""):
    """(description, TensorProto) of every tensor of ``graph``: initializers, sparse ones and the
    tensors in node attributes, subgraphs included."""
    from onnx import AttributeProto

    for tensor in graph.initializer:
        yield f"{where}initializer {tensor.name!r}", tensor
    for sparse in graph.sparse_initializer:
        yield f"{where}sparse initializer {sparse.values.name!r}", sparse.values
        yield f"{where}sparse initializer {sparse.values.name!r} (indices)", sparse.indices
    for node in graph.node:
        for attr in node.attribute:
            at = f"{where}node {node.name or node.op_type!r} attribute {attr.name!r}"
            if attr.type == AttributeProto.TENSOR:
                yield at, attr.t
            elif attr.type == AttributeProto.TENSORS:
                yield from ((at, t) for t in attr.tensors)
            elif attr.type == AttributeProto.GRAPH:
                yield from _tensors(attr.g, f"{at}: ")
            elif attr.type == AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _tensors(g, f"{at}: ")


# Element types stored with fewer than 8 bits per element (packed, the last byte padded).
_PACKED_BITS = {"INT4": 4, "UINT4": 4, "FLOAT4E2M1": 4, "INT2": 2, "UINT2": 2}


def tensor_bytes(tensor, what: str, where: str) -> int:
    """The bytes of ``tensor``'s data as raw_data: prod(dims) elements of its element type."""
    import onnx

    if any(d < 0 for d in tensor.dims):
        raise ModelError(where, f"{what}: negative dimension in its shape {list(tensor.dims)}")
    count = math.prod(tensor.dims)
    name = onnx.TensorProto.DataType.Name(tensor.data_type) if tensor.data_type in \
        onnx.TensorProto.DataType.values() else None
    if name in _PACKED_BITS:
        return -(-count * _PACKED_BITS[name] // 8)
    if name in (None, "UNDEFINED", "STRING"):
        raise ModelError(where, f"{what}: element type {name or tensor.data_type} cannot be stored as external data")
    return count * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize


def _int_field(value: str, key: str, what: str, location: str, where: str) -> int:
    if not value.isascii() or not value.isdigit():
        raise ModelError(where, f"{what}: external data {location!r}: {key} {value[:40]!r} is not a "
                         "non-negative integer")
    return int(value)


def load_external(model, where: str, base: Path) -> None:
    """Read every tensor's external data (from files in ``base``, the model's folder) into its
    raw_data, each size checked first; a ModelError naming the tensor and the file otherwise."""
    from onnx import TensorProto

    total = 0
    for what, tensor in _tensors(model.graph):
        if not (tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL):
            continue
        fields = {entry.key: entry.value for entry in tensor.external_data}
        location = fields.get("location", "")
        if not location:
            raise ModelError(where, f"{what}: external data without a location")
        offset = _int_field(fields.get("offset", "0"), "offset", what, location, where)
        nbytes = tensor_bytes(tensor, what, where)
        if "length" in fields:
            length = _int_field(fields["length"], "length", what, location, where)
            if length != nbytes:
                raise ModelError(where, f"{what}: external data {location!r}: length {length} differs from the "
                                 f"{nbytes} bytes of its shape {list(tensor.dims)}")
        if nbytes > MAX_MODEL_BYTES - total:
            raise ModelError(where, f"{what}: external data {location!r}: {nbytes} bytes would bring the model's "
                             f"external data past the {mib(MAX_MODEL_BYTES)} limit (vdla_hw.limits.MAX_MODEL_BYTES)")
        tensor.raw_data = _read_at(base, location, offset, nbytes, what, where)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
        total += nbytes


def _read_at(base: Path, location: str, offset: int, nbytes: int, what: str, where: str) -> bytes:
    """``nbytes`` bytes at ``offset`` of the regular file ``location`` inside the folder ``base``."""
    at = f"{what}: external data file {location!r}"
    try:
        data = (base / location).resolve()
    except (OSError, ValueError) as err:
        raise ModelError(where, f"{at}: not a usable path ({err})") from None
    if base not in data.parents:
        raise ModelError(where, f"{at} points outside the model's folder")
    try:
        fd = os.open(data, os.O_RDONLY | os.O_NONBLOCK)  # non-blocking: a FIFO must not hang the open
    except FileNotFoundError:
        raise ModelError(where, f"cannot read its tensors: {at} is missing (expected at {data}); copy it beside "
                         "the .onnx file") from None
    except OSError as err:
        raise ModelError(where, f"{at}: cannot open it ({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ModelError(where, f"{at} is not a regular file")
        if offset + nbytes > info.st_size:
            raise ModelError(where, f"{at} has {info.st_size} bytes, too few for offset {offset} + the "
                             f"{nbytes} bytes of the tensor")
        fh.seek(offset)
        raw = fh.read(nbytes)
    if len(raw) != nbytes:  # shrank while being read
        raise ModelError(where, f"{at} ended after {len(raw)} of the tensor's {nbytes} bytes")
    return raw


def check_names(model, where: str) -> None:
    """Every value of the graph named once: by one graph input, one initializer or one node output."""
    def node_name(index: int, node) -> str:
        return repr(node.name) if node.name else f"#{index} ({node.op_type})"

    inputs, inits = set(), set()
    for value in model.graph.input:
        if value.name in inputs:
            raise ModelError(where, f"graph input {value.name!r} is declared twice")
        inputs.add(value.name)
    for tensor in model.graph.initializer:
        if tensor.name in inits:
            raise ModelError(where, f"initializer {tensor.name!r} is given twice")
        inits.add(tensor.name)
    writers: dict[str, str] = {}
    for index, node in enumerate(model.graph.node):
        for out in node.output:
            if not out:
                continue  # an optional output left out
            this = node_name(index, node)
            if out in writers:
                first = writers[out]
                who = f"node {this} twice" if first == this else f"both node {first} and node {this}"
                raise ModelError(where, f"value {out!r} is written by {who}; each value must have one producer")
            if out in inputs or out in inits:
                kind = "a graph input" if out in inputs else "an initializer"
                raise ModelError(where, f"node {this} writes {out!r}, which is {kind}")
            writers[out] = this


def _default_opset(model, where: str) -> int:
    versions = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    version = versions.get("ai.onnx")
    if version is None:
        raise ModelError(where, "the model imports no ai.onnx opset")
    return version


def upgraded(model, where: str):
    """``model``, or, if its opset is below OPSET_MIN, its conversion to OPSET_MIN by onnx's
    version converter (``onnx.version_converter.convert_version``: older exports, e.g. resnet18 at
    opset 11). A conversion that fails is one ModelError naming the opset and the reason."""
    import onnx
    from onnx import version_converter

    version = _default_opset(model, where)
    if version >= OPSET_MIN:
        return model
    cannot = f"opset {version} cannot be converted to opset {OPSET_MIN} by onnx's version converter"
    unknown = sorted({n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")
                      and not onnx.defs.has(n.op_type, version, "")})
    if unknown:
        raise ModelError(where, f"{cannot}: opset {version} has no op {', '.join(unknown)}; re-export with "
                         f"opset_version {OPSET_MIN} to {OPSET_MAX}")
    try:
        return version_converter.convert_version(model, OPSET_MIN)
    except (RuntimeError, ValueError, onnx.checker.ValidationError) as err:
        lines = str(err).strip().splitlines() or [type(err).__name__]
        # without the converter's C++ source position and assertion: "...transformers.h:35: operator():
        # Assertion `node->i(attr) == value` failed: Attribute spatial must have value 1"
        reason = re.sub(r"^\S+\.(cc|h):\d+: [\w()]+: (Assertion `.*?` failed: )?", "", lines[0])
        raise ModelError(where, f"{cannot}: {reason}; re-export with opset_version {OPSET_MIN} to "
                         f"{OPSET_MAX}") from None


def opset_of(model, where: str) -> int:
    version = _default_opset(model, where)
    if not OPSET_MIN <= version <= OPSET_MAX:
        raise ModelError(where, f"opset {version} is not supported (supported: {OPSET_MIN} to {OPSET_MAX}, older "
                         f"ones converted to {OPSET_MIN}); re-export with opset_version in that range")
    return version


def data_input(model, where: str, consts):
    inputs = [i for i in model.graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise ModelError(where, f"the model must have exactly one data input, found {len(inputs)}"
                         f" ({', '.join(i.name for i in inputs)})")
    if not model.graph.output:
        raise ModelError(where, "the model has no output")
    return inputs[0]


def resolve_shape(value_info, where: str, input_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """The input's static shape: its own dims, with ``input_shape`` filling (and checked against) them."""
    import onnx

    tensor = value_info.type.tensor_type
    kind = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).kind if tensor.elem_type else "?"
    if kind not in "fiu":
        raise ModelError(where, f"input {value_info.name!r} is not a numeric tensor; the model must take float "
                         "(or integer) input, which is quantized here")
    if not tensor.HasField("shape"):
        if input_shape is None:
            raise ModelError(where, f"input {value_info.name!r} has no shape; give --input-shape N,C,H,W")
        return tuple(input_shape)
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]
    if input_shape is not None:
        if len(input_shape) != len(dims):
            raise ModelError(where, f"--input-shape {','.join(map(str, input_shape))} has {len(input_shape)} "
                             f"dimensions; input {value_info.name!r} has {len(dims)} ({dims})")
        for axis, (want, have) in enumerate(zip(input_shape, dims)):
            if isinstance(have, int) and have != want:
                raise ModelError(where, f"--input-shape gives {want} for axis {axis} of input {value_info.name!r}, "
                                 f"which the model fixes to {have}")
        return tuple(int(d) for d in input_shape)
    dynamic = [(axis, d) for axis, d in enumerate(dims) if not isinstance(d, int) or d <= 0]
    if dynamic:
        named = ", ".join(f"axis {a} ({d!r})" for a, d in dynamic)
        raise ModelError(where, f"input {value_info.name!r} has dynamic dimensions: {named}; give "
                         f"--input-shape with {len(dims)} numbers (e.g. {','.join(str(d) if isinstance(d, int) and d > 0 else '1' if a == 0 else '224' for a, d in enumerate(dims))})")
    return tuple(int(d) for d in dims)


BIG_CONSTANT = 4096  # elements: float initializers above this reach shape inference as typed inputs


def _copy_field(target, field, value) -> None:
    if hasattr(value, "extend"):  # a repeated field
        getattr(target, field.name).extend(value)
    elif field.message_type is not None:
        getattr(target, field.name).CopyFrom(value)
    else:
        setattr(target, field.name, value)


def _without_weights(model):
    """A copy of ``model`` for shape inference without the data of its large float initializers
    (weights: declared as typed graph inputs instead), so it costs no second copy of the weights;
    the integer and small constants that shape arithmetic reads stay."""
    import onnx
    from onnx import helper

    light = onnx.ModelProto()
    for field, value in model.ListFields():  # every field but the graph
        if field.name != "graph":
            _copy_field(light, field, value)
    for field, value in model.graph.ListFields():  # every field of the graph but its initializers
        if field.name != "initializer":
            _copy_field(light.graph, field, value)
    declared = {v.name for v in model.graph.input}
    for tensor in model.graph.initializer:
        big = helper.tensor_dtype_to_np_dtype(tensor.data_type).kind == "f" and math.prod(tensor.dims) > BIG_CONSTANT
        if not big:
            light.graph.initializer.append(tensor)
        elif tensor.name not in declared:
            light.graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    return light


def infer_shapes(model, where: str, input_name: str, shape: tuple[int, ...]):
    """``model`` with its input fixed to ``shape`` and onnx's inferred shapes for every value; the
    large float initializers are left out (``_without_weights``): use ``model``'s own."""
    import onnx

    fixed = _without_weights(model)
    for value in fixed.graph.input:
        if value.name == input_name:
            dims = value.type.tensor_type.shape.dim
            del dims[:]
            for d in shape:
                dims.add().dim_value = int(d)
    for value in fixed.graph.output:  # a stale output shape would clash with the new input shape
        value.type.tensor_type.ClearField("shape")
    del fixed.graph.value_info[:]
    try:
        return onnx.shape_inference.infer_shapes(fixed, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(where, f"shape inference failed for input shape {shape}: {first}") from None


def static_shapes(model) -> dict[str, tuple[int, ...]]:
    """Value name -> shape for every value whose inferred shape is fully static."""
    shapes = {}
    for value in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        tensor = value.type.tensor_type
        if tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            shapes[value.name] = tuple(int(d.dim_value) for d in tensor.shape.dim)
    return shapes
