"""Import a float ONNX model into the graph IR (``compiler.frontend.graph``).

Supported: Conv (group 1, no dilation), BatchNormalization (folded into the Conv before it),
Relu, Clip(min=0, no max) as ReLU, Add, MaxPool, GlobalAveragePool, AveragePool over the whole
input, Flatten, Reshape to (N, -1), Gemm, MatMul (+ Add of a constant bias), Identity,
Dropout. Anything else is one ModelError naming every unsupported node.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.frontend.graph import Graph, ModelError, Node, conv_out

PASSTHROUGH = ("Identity", "Dropout")


def _read(path: str | Path):
    import onnx
    from google.protobuf.message import DecodeError

    where = str(path)
    if not Path(path).is_file():
        raise ModelError(where, "no such file")
    try:
        model = onnx.load(str(path))
    except onnx.checker.ValidationError as err:  # e.g. its external .data file is missing
        raise ModelError(where, f"cannot read its tensors: {' '.join(str(err).split())}") from None
    except (DecodeError, ValueError, OSError) as err:
        raise ModelError(where, f"not an ONNX model file ({type(err).__name__})") from None
    if not model.graph.node:
        raise ModelError(where, "not an ONNX model file (no graph nodes)")
    return model


def _attrs(node) -> dict:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class _Importer:
    def __init__(self, model, where: str):
        from onnx import numpy_helper

        self.where = where
        self.graph = model.graph
        self.consts = {t.name: numpy_helper.to_array(t).astype(np.float32) if numpy_helper.to_array(t).dtype.kind == "f"
                       else numpy_helper.to_array(t) for t in self.graph.initializer}
        for name, value in self.consts.items():
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise ModelError(where, f"initializer {name!r} holds {int((~np.isfinite(value)).sum())} NaN or "
                                 "infinite values; the model cannot be quantized")
        self.alias: dict[str, str] = {}
        self.nodes: list[Node] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.uses: dict[str, int] = {}
        for node in self.graph.node:
            for name in node.input:
                self.uses[name] = self.uses.get(name, 0) + 1
        for out in self.graph.output:
            self.uses[out.name] = self.uses.get(out.name, 0) + 1

    def fail(self, node, why: str) -> ModelError:
        return ModelError(self.where, why, node.name or (node.output[0] if node.output else "?"), node.op_type)

    def value(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name

    def const(self, node, name: str) -> np.ndarray:
        if name not in self.consts:
            raise self.fail(node, f"input {name!r} must be a constant initializer")
        return self.consts[name]

    def tensor(self, node, name: str) -> str:
        value = self.value(name)
        if value not in self.shapes:
            raise self.fail(node, f"input {name!r} is not produced by an earlier node or the graph input")
        return value

    def emit(self, node, op: str, inputs: list[str], shape: tuple[int, ...], **attrs) -> None:
        out = node.output[0]
        self.nodes.append(Node(node.name or out, op, inputs, out, attrs))
        self.shapes[out] = tuple(int(d) for d in shape)

    # --- ops ------------------------------------------------------------------------------
    def op_Conv(self, node, a):
        x = self.tensor(node, node.input[0])
        w = self.const(node, node.input[1]).astype(np.float32)
        b = self.const(node, node.input[2]).astype(np.float32) if len(node.input) > 2 and node.input[2] else np.zeros(w.shape[0], np.float32)
        if a.get("group", 1) != 1:
            raise self.fail(node, f"grouped convolution (group={a['group']}) is not supported")
        if any(d != 1 for d in a.get("dilations", [1, 1])):
            raise self.fail(node, f"dilated convolution {a['dilations']} is not supported")
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise self.fail(node, "auto_pad is not supported; export with explicit pads")
        n, c, h, wd = self.shapes[x]
        if w.ndim != 4 or w.shape[1] != c:
            raise self.fail(node, f"weight shape {w.shape} does not match {c} input channels")
        kh, kw = w.shape[2:]
        sh, sw = a.get("strides", [1, 1])
        pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
        shape = (n, w.shape[0], conv_out(h, kh, sh, pt, pb), conv_out(wd, kw, sw, pl, pr))
        self.emit(node, "conv", [x], shape, weight=w, bias=b, stride=(sh, sw), pad=(pt, pl, pb, pr))

    def op_BatchNormalization(self, node, a):
        x = self.tensor(node, node.input[0])
        conv = self.nodes[-1] if self.nodes and self.nodes[-1].output == x else None
        if conv is None or conv.op != "conv" or self.uses.get(x, 0) != 1:
            raise self.fail(node, "BatchNormalization is only supported directly after a Conv it can be folded into")
        if a.get("training_mode", 0):
            raise self.fail(node, "training_mode=1 is not supported; export the model in eval mode")
        scale, beta, mean, var = (self.const(node, name).astype(np.float64) for name in node.input[1:5])
        channels = conv.attrs["weight"].shape[0]
        if any(p.shape != (channels,) for p in (scale, beta, mean, var)):
            raise self.fail(node, f"scale, B, mean and var must each hold the Conv's {channels} channels, got shapes "
                            f"{[p.shape for p in (scale, beta, mean, var)]}")
        k = scale / np.sqrt(var + a.get("epsilon", 1e-5))
        conv.attrs["weight"] = (conv.attrs["weight"] * k[:, None, None, None]).astype(np.float32)
        conv.attrs["bias"] = ((conv.attrs["bias"] - mean) * k + beta).astype(np.float32)
        self.alias[node.output[0]] = x

    def op_Relu(self, node, a):
        x = self.tensor(node, node.input[0])
        self.emit(node, "relu", [x], self.shapes[x])

    def op_Clip(self, node, a):
        low = a.get("min", float(self.const(node, node.input[1])) if len(node.input) > 1 and node.input[1] else None)
        high = a.get("max", float(self.const(node, node.input[2])) if len(node.input) > 2 and node.input[2] else None)
        if low != 0 or (high is not None and np.isfinite(high)):
            raise self.fail(node, f"only Clip(min=0) without an upper bound (ReLU) is supported, got [{low}, {high}]")
        self.op_Relu(node, a)

    def op_Add(self, node, a):
        names = [self.value(n) for n in node.input]
        consts = [n for n in names if n in self.consts]
        prev = self.nodes[-1] if self.nodes else None
        if consts and prev is not None and prev.op == "dense" and prev.output in names and self.uses.get(prev.output) == 1:
            prev.attrs["bias"] = prev.attrs["bias"] + self.consts[consts[0]].reshape(-1).astype(np.float32)
            self.alias[node.output[0]] = prev.output
            return
        if consts:
            raise self.fail(node, "Add of a constant is only supported as the bias of a MatMul")
        x, y = (self.tensor(node, n) for n in node.input)
        if self.shapes[x] != self.shapes[y]:
            raise self.fail(node, f"Add inputs have shapes {self.shapes[x]} and {self.shapes[y]}; broadcasting is not supported")
        self.emit(node, "add", [x, y], self.shapes[x])

    def op_MaxPool(self, node, a):
        x = self.tensor(node, node.input[0])
        if a.get("ceil_mode", 0):
            raise self.fail(node, "ceil_mode=1 is not supported")
        if any(d != 1 for d in a.get("dilations", [1, 1])):
            raise self.fail(node, "dilated pooling is not supported")
        kh, kw = a["kernel_shape"]
        sh, sw = a.get("strides", [1, 1])
        pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
        if max(pt, pl, pb, pr) >= min(kh, kw):
            raise self.fail(node, f"padding {a.get('pads')} must be smaller than the window {kh}x{kw}")
        n, c, h, w = self.shapes[x]
        shape = (n, c, conv_out(h, kh, sh, pt, pb), conv_out(w, kw, sw, pl, pr))
        self.emit(node, "maxpool", [x], shape, kernel=(kh, kw), stride=(sh, sw), pad=(pt, pl, pb, pr))

    def op_GlobalAveragePool(self, node, a):
        x = self.tensor(node, node.input[0])
        n, c, _, _ = self.shapes[x]
        self.emit(node, "avgpool", [x], (n, c, 1, 1))

    def op_AveragePool(self, node, a):
        x = self.tensor(node, node.input[0])
        _, _, h, w = self.shapes[x]
        if list(a["kernel_shape"]) != [h, w] or any(a.get("pads", [0] * 4)):
            raise self.fail(node, f"only AveragePool over the whole {h}x{w} input is supported")
        self.op_GlobalAveragePool(node, a)

    def op_Flatten(self, node, a):
        x = self.tensor(node, node.input[0])
        shape = self.shapes[x]
        if a.get("axis", 1) != 1:
            raise self.fail(node, f"Flatten axis {a['axis']} is not supported (only 1)")
        if len(shape) == 2:
            self.alias[node.output[0]] = x
            return
        self.emit(node, "flatten", [x], (shape[0], int(np.prod(shape[1:]))))

    def op_Reshape(self, node, a):
        x = self.tensor(node, node.input[0])
        target = [int(d) for d in self.const(node, node.input[1]).reshape(-1)]
        shape = self.shapes[x]
        flat = (shape[0], int(np.prod(shape[1:])))
        if len(target) != 2 or target[1] not in (-1, flat[1]) or target[0] not in (0, -1, shape[0]):
            raise self.fail(node, f"only Reshape to (N, -1) is supported, got {target} for {shape}")
        self.op_Flatten(node, {})

    def op_Gemm(self, node, a):
        x = self.tensor(node, node.input[0])
        if a.get("transA", 0):
            raise self.fail(node, "transA=1 is not supported")
        w = self.const(node, node.input[1]).astype(np.float32)
        w = w if a.get("transB", 0) else w.T
        bias = self.const(node, node.input[2]).reshape(-1) if len(node.input) > 2 and node.input[2] else np.zeros(w.shape[0])
        self._dense(node, x, w * a.get("alpha", 1.0), np.broadcast_to(bias * a.get("beta", 1.0), (w.shape[0],)))

    def op_MatMul(self, node, a):
        x = self.tensor(node, node.input[0])
        w = self.const(node, node.input[1]).astype(np.float32)
        self._dense(node, x, w.T, np.zeros(w.shape[1], np.float32))

    def _dense(self, node, x, w, bias):
        shape = self.shapes[x]
        if len(shape) != 2 or w.ndim != 2 or w.shape[1] != shape[1]:
            raise self.fail(node, f"dense weight {w.shape} does not match input {shape}")
        self.emit(node, "dense", [x], (shape[0], w.shape[0]), weight=np.ascontiguousarray(w, np.float32),
                  bias=np.asarray(bias, np.float32).copy())

    def node(self, node) -> None:
        if node.op_type == "Constant":
            from onnx import numpy_helper
            self.consts[node.output[0]] = numpy_helper.to_array(_attrs(node)["value"])
        elif node.op_type in PASSTHROUGH:
            self.alias[node.output[0]] = self.value(node.input[0])
        else:
            getattr(self, f"op_{node.op_type}")(node, _attrs(node))
        for out in node.output[:1]:
            if out in self.shapes and min(self.shapes[out], default=1) <= 0:
                raise self.fail(node, f"output shape {self.shapes[out]} is empty (a window or stride larger "
                                "than its input?)")

    # --- driver ---------------------------------------------------------------------------
    def run(self) -> Graph:
        inputs = [i for i in self.graph.input if i.name not in self.consts]
        if len(inputs) != 1:
            raise ModelError(self.where, f"the model must have exactly one data input, found {len(inputs)}")
        dims = [d.dim_value or 1 for d in inputs[0].type.tensor_type.shape.dim]
        if len(dims) != 4:
            raise ModelError(self.where, f"the input must be NCHW (4-D), got shape {dims}")
        self.shapes[inputs[0].name] = tuple(dims)
        unsupported = [n for n in self.graph.node if n.op_type not in PASSTHROUGH + ("Constant",)
                       and not hasattr(self, f"op_{n.op_type}")]
        if unsupported:
            first = unsupported[0]
            more = f" (and {len(unsupported) - 1} more: {', '.join(sorted({n.op_type for n in unsupported[1:]}))})" \
                if len(unsupported) > 1 else ""
            raise ModelError(self.where, f"unsupported op {first.op_type}{more}; supported: Conv, BatchNormalization, "
                             "Relu, Clip, Add, MaxPool, GlobalAveragePool, AveragePool, Flatten, Reshape, Gemm, MatMul",
                             first.name or first.output[0], first.op_type)
        for node in self.graph.node:
            try:
                self.node(node)
            except ModelError:
                raise
            except (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError, AttributeError, OverflowError) as err:
                # a node whose inputs, attributes or initializers do not have the form its op needs
                raise self.fail(node, f"malformed {node.op_type} node ({type(err).__name__}: {err})") from None
        output = self.value(self.graph.output[0].name)
        if output not in self.shapes:
            raise ModelError(self.where, f"graph output {output!r} is not computed by any node")
        return Graph(self.graph.name or Path(self.where).stem, inputs[0].name, output, self.nodes, self.shapes)


def load_onnx(path: str | Path) -> Graph:
    """The float graph of an ONNX file; ModelError names the file and node of any problem."""
    return from_model(_read(path), str(path))


def from_model(model, where: str = "<model>") -> Graph:
    """The float graph of an in-memory ONNX ModelProto (``where`` names it in errors)."""
    try:
        return _Importer(model, where).run()
    except ModelError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, OverflowError, UnicodeError) as err:
        # malformed outside any one node (initializers, inputs, names): a damaged or odd file
        raise ModelError(where, f"malformed model ({type(err).__name__}: {err})") from None
