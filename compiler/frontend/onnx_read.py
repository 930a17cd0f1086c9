"""Reading an ONNX file for import: external data, opset, the input shape, shape inference.

``read_model(path)`` loads the file and its external data (``.onnx.data`` beside it, as
``torch.onnx.export`` writes it), with one-line ModelErrors for a missing file, a missing data
file, a protobuf that is not a model. ``prepare(model, where, input_shape)`` fixes the input's
shape (dynamic dimensions need ``input_shape``; never a silent 1), checks the opset and runs
onnx's shape inference, so every value gets a static shape.
"""

from __future__ import annotations

from pathlib import Path

from compiler.frontend.graph import ModelError

OPSET_MIN, OPSET_MAX = 13, 21


def read_model(path: str | Path):
    import onnx
    from google.protobuf.message import DecodeError
    from onnx.external_data_helper import ExternalDataInfo, load_external_data_for_model, uses_external_data

    where = str(path)
    if not Path(path).is_file():
        raise ModelError(where, "no such file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, OSError, RuntimeError) as err:
        raise ModelError(where, f"not an ONNX model file ({type(err).__name__})") from None
    if not model.graph.node:
        raise ModelError(where, "not an ONNX model file (no graph nodes)")
    base = Path(path).resolve().parent
    for tensor in model.graph.initializer:
        if uses_external_data(tensor):
            info = ExternalDataInfo(tensor)
            data = (base / info.location).resolve()
            if base not in data.parents and data.parent != base:
                raise ModelError(where, f"initializer {tensor.name!r}: external data path {info.location!r} "
                                 "points outside the model's folder")
            if not data.is_file():
                raise ModelError(where, f"cannot read its tensors: initializer {tensor.name!r}: external data file "
                                 f"{info.location!r} is missing (expected at {data}); copy it beside the .onnx file")
            if info.length and data.stat().st_size < info.offset + info.length:
                raise ModelError(where, f"initializer {tensor.name!r}: external data file {info.location!r} is "
                                 f"shorter than its offset {info.offset} + length {info.length}")
    try:
        load_external_data_for_model(model, str(base))
    except (OSError, ValueError) as err:
        raise ModelError(where, f"cannot read external data ({err})") from None
    return model


def opset_of(model, where: str) -> int:
    versions = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    version = versions.get("ai.onnx")
    if version is None:
        raise ModelError(where, "the model imports no ai.onnx opset")
    if not OPSET_MIN <= version <= OPSET_MAX:
        raise ModelError(where, f"opset {version} is not supported (supported: {OPSET_MIN} to {OPSET_MAX}); "
                         "re-export with opset_version in that range")
    return version


def data_input(model, where: str, consts):
    inputs = [i for i in model.graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise ModelError(where, f"the model must have exactly one data input, found {len(inputs)}"
                         f" ({', '.join(i.name for i in inputs)})")
    if len(model.graph.output) != 1:
        raise ModelError(where, f"the model must have exactly one output, found {len(model.graph.output)}")
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


def infer_shapes(model, where: str, input_name: str, shape: tuple[int, ...]):
    """``model`` with its input fixed to ``shape`` and onnx's inferred shapes for every value."""
    import onnx

    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
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
