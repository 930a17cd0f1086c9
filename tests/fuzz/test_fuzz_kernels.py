"""Fuzzing the CPU kernels through deployment packages (issue 22, item 2): a valid tiny graph for
every CPU kernel family (quantize, conv, dense, add, mul, lut, muladd, relu, maxpool, global and
windowed average pool, concat, gather, softmax, layernorm, reshape), then hostile changes to its attributes
(indices past the input, zero divisors, huge or negative sizes, strides and pads, wrong dtypes
and shapes, non-integers) and to the declared shapes. The package runs the server's path
(``run_files`` on a sim device, host JIT) and ends in a clean VdlaError or in exactly the numpy
reference's output, within the harness's time and memory bounds; a read out of bounds shows as
an output that differs from the reference, a crash kills the run."""

import io

import numpy as np
import pytest
from hypothesis import event, given, settings, strategies as st

from compiler.frontend.float_ref import avgpool_count
from compiler.network.package import graph_from_files, run_files
from compiler.quantize import reference
from compiler.quantize.qgraph import QNode
from driver import open_device
from tests.compiler.network import tiny_packages as tiny
from tests.fuzz.harness import FUZZ, outcome

# 25 examples per family (a quarter of the profile's budget: about 30 s under CI=true); more with
# --hypothesis-profile=long
EXAMPLES = settings(FUZZ, max_examples=max(10, settings.default.max_examples // 4))

EXTREME = [0, -1, 1, 7, 64, 65, 255, 256, 2**15, 2**16, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**40, 2**63 - 1]
HOSTILE_INT = st.one_of(st.sampled_from(EXTREME), st.integers(-300, 300))
HOSTILE_SCALAR = st.one_of(HOSTILE_INT, st.sampled_from([True, False, 1.5, None, "1", [1]]))
ARRAY_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float32", "bool"]


@pytest.fixture(scope="module")
def device():
    dev = open_device("sim", tiny.CONFIG)
    yield dev
    dev.close()


def _small(draw, lo=1, hi=4):
    return draw(st.integers(lo, hi))


def _nchw(draw):
    return (1, _small(draw, 1, 3), _small(draw, 1, 6), _small(draw, 1, 6))


def _clip(draw):
    lo = draw(st.integers(-128, 100))
    return {"lo": lo, "hi": draw(st.integers(lo, 127))}


def _window(draw, h, w):
    kh, kw = _small(draw, 1, min(3, h)), _small(draw, 1, min(3, w))
    pads = tuple(draw(st.integers(0, k - 1)) for k in (kh, kw, kh, kw))
    return {"kernel": (kh, kw), "stride": (_small(draw, 1, 2), _small(draw, 1, 2)), "pad": pads, "ceil": (0, 0)}


def valid_graph(draw, op):
    """(input shape, the op's node and any node it needs, declared shapes but the output's): valid."""
    x = _nchw(draw)
    n, c, h, w = x
    inputs, extra, attrs = ["xq"], [], {}
    if op == "quantize":
        inputs, attrs = ["x"], {"frac": draw(st.integers(-8, 12))}
    elif op == "conv":
        groups = draw(st.sampled_from([g for g in (1, 2, 3) if c % g == 0]))
        oc = groups * _small(draw, 1, 2)
        kh, kw = _small(draw, 1, 3), _small(draw, 1, 3)
        per_channel = draw(st.booleans())
        attrs = {"weight": np.random.default_rng(oc * kh).integers(-128, 128, (oc, c // groups, kh, kw), dtype=np.int8),
                 "bias": np.arange(oc, dtype=np.int32) * 37, "stride": (_small(draw, 1, 2), _small(draw, 1, 2)),
                 "pad": tuple(draw(st.integers(0, max(kh, kw) - 1)) for _ in range(4)), "groups": groups,
                 "pad_value": draw(st.sampled_from([0, -128, 5])),
                 "shift": np.arange(oc, dtype=np.int32) % 9 if per_channel else draw(st.integers(0, 10)),
                 "wide": draw(st.booleans()), **_clip(draw)}
        if attrs["wide"]:
            attrs.update(lo=-2**31, hi=2**31 - 1)
        (sh, sw), (pt, pl, pb, pr) = attrs["stride"], attrs["pad"]
        if (h + pt + pb - kh) < 0 or (w + pl + pr - kw) < 0:
            attrs["pad"], attrs["stride"] = (kh - 1, kw - 1, kh - 1, kw - 1), (1, 1)
    elif op == "dense":
        x = (1, _small(draw, 1, 12))
        m = _small(draw, 1, 5)
        attrs = {"weight": np.random.default_rng(m).integers(-128, 128, (m, x[1]), dtype=np.int8),
                 "bias": np.arange(m, dtype=np.int32) * -11, "shift": draw(st.integers(0, 8)),
                 "wide": draw(st.booleans()), **_clip(draw)}
    elif op == "add":
        inputs = ["xq", "xq"]
        attrs = {"a_shift": draw(st.integers(0, 3)), "b_shift": draw(st.integers(0, 3)), "shift": draw(st.integers(0, 4)),
                 "offset": draw(st.integers(-500, 500)), "a_mul": draw(st.integers(0, 300)), "b_mul": 1, **_clip(draw)}
    elif op == "mul":  # by itself, or by a per-channel gate (N, C, 1, 1) broadcast over H x W
        if draw(st.booleans()):
            extra = [QNode("gate", "gather", ["xq"], "gate", {"index": (np.arange(c) * h * w).astype(np.int32),
                                                              "fill": np.zeros(c, np.int8), "shape": (n, c, 1, 1)})]
        inputs = ["xq", "gate" if extra else "xq"]
        attrs = {"a_zp": draw(st.sampled_from([0, -128, 17])), "b_zp": draw(st.sampled_from([0, -128])),
                 "mul": draw(st.integers(0, 1 << 14)), "shift": draw(st.integers(0, 31)), "zp": 0, **_clip(draw)}
    elif op == "lut":
        attrs = {"table": np.random.default_rng(3).integers(-128, 128, 256, dtype=np.int8)}
    elif op == "muladd":
        attrs = {"mul": np.arange(c * h * w, dtype=np.int32).reshape(c, h, w) - 7,
                 "add": np.full((c, h, w), 40, np.int32), "shift": draw(st.integers(0, 6)), **_clip(draw)}
    elif op == "maxpool":
        attrs = _window(draw, h, w)
    elif op == "avgpool":
        attrs = {"up": draw(st.integers(0, 4)), "add": draw(st.integers(-100, 100)), "wide": draw(st.booleans()),
                 **_clip(draw)}
    elif op == "avgpool2d":
        attrs = _window(draw, h, w)
        count = avgpool_count((h, w), attrs["kernel"], attrs["stride"], attrs["pad"], (0, 0),
                              draw(st.booleans())).astype(np.int64)
        up, zx = draw(st.integers(0, 3)), draw(st.sampled_from([0, -128]))
        taps = attrs["kernel"][0] * attrs["kernel"][1]
        attrs.update(count=count.astype(np.int32), add=(count // 2 - ((taps * zx) << up)).astype(np.int32), up=up,
                     pad_value=zx, **_clip(draw))
    elif op == "concat":
        axis = _small(draw, 0, 3)
        other = list(x)
        other[axis] = _small(draw, 1, 3)
        size = int(np.prod(other))
        extra = [QNode("other", "gather", ["xq"], "other",
                       {"index": (np.arange(size) % (n * c * h * w)).astype(np.int32), "fill": np.zeros(size, np.int8),
                        "shape": tuple(other)})]
        inputs = ["xq", "other"]
        attrs = {"axis": axis, "shifts": (draw(st.integers(0, 3)), 0), "zps": (draw(st.sampled_from([0, -128])), 0),
                 "zp": 0}
    elif op == "gather":
        size = _small(draw, 1, 40)
        attrs = {"index": np.random.default_rng(size).integers(-1, n * c * h * w, size).astype(np.int32),
                 "fill": np.arange(size, dtype=np.int8), "shape": (1, size)}
    elif op == "softmax":
        d = np.arange(256, dtype=np.float64) - 255
        attrs = {"axis": _small(draw, 1, 3), "table": np.rint(np.exp(d / 16.0) * 65536).astype(np.int32)}
    elif op == "layernorm":  # over the last axis (W)
        shift = draw(st.integers(0, 30))
        attrs = {"mul": (np.arange(w, dtype=np.int32) * 9973) % (1 << 16) - (1 << 15),
                 "add": (np.arange(w, dtype=np.int64) - 2) << shift, "eps": draw(st.integers(0, 5000)), "shift": shift}
    elif op == "reshape":
        attrs = {"shape": (1, c * h * w)}
    elif op == "relu":
        pass
    return x, extra, QNode("n", op, inputs, "y", attrs)


def hostile_array(draw, array):
    kind = draw(st.sampled_from(["value", "offset", "dtype", "shape"]))
    if kind == "value" and array.size:
        out = array.astype(np.int64).reshape(-1).copy()
        out[draw(st.integers(0, array.size - 1))] = draw(st.sampled_from(EXTREME))
        return out.reshape(array.shape).astype(np.int64 if draw(st.booleans()) else array.dtype)
    if kind == "offset":
        return (array.astype(np.int64) + draw(st.integers(-300, 300))).astype(np.int64)
    if kind == "dtype":
        return array.astype(draw(st.sampled_from(ARRAY_DTYPES)))
    shape = draw(st.lists(st.integers(0, 5), max_size=3))
    return np.resize(array.reshape(-1), shape).astype(array.dtype) if array.size else np.zeros(shape, array.dtype)


def hostile_value(draw, value):
    """``value`` (an attribute) replaced by something of the wrong type, length or range."""
    if isinstance(value, np.ndarray):
        return hostile_array(draw, value)
    if isinstance(value, tuple):
        kind = draw(st.sampled_from(["element", "length", "scalar"]))
        if kind == "element" and value:
            at = draw(st.integers(0, len(value) - 1))
            return value[:at] + (draw(HOSTILE_SCALAR),) + value[at + 1:]
        if kind == "length":
            return tuple(draw(st.lists(HOSTILE_INT, max_size=5)))
        return draw(HOSTILE_SCALAR)
    return draw(HOSTILE_SCALAR)


def hostile_shape(draw):
    return tuple(draw(st.one_of(st.lists(st.integers(0, 9), min_size=1, max_size=4),
                                st.sampled_from([[1, 2**40], [2**31, 1], [-1, 4]]))))


def fuzz_one(device, data, op):
    x_shape, extra, node = valid_graph(data.draw, op)
    x = np.linspace(-3, 3, int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape)
    shapes = {e.output: e.attrs["shape"] for e in extra}
    q = tiny.graph(x_shape, [*extra, node], {**shapes, "y": (1,)})
    declared = reference.run(q, x)["y"].shape  # the valid graph's output
    q.shapes["y"] = declared
    changes = []
    for _ in range(data.draw(st.integers(0, 2))):
        target = data.draw(st.sampled_from(sorted(node.attrs) + ["<output shape>", "<input shape>"]))
        changes.append(target)
        if target == "<output shape>":
            q.shapes["y"] = hostile_shape(data.draw)
        elif target == "<input shape>":
            q.shapes["xq"] = hostile_shape(data.draw)
        else:
            node.attrs[target] = hostile_value(data.draw, node.attrs[target])
    event(f"{op}: {'valid' if not changes else 'changed ' + ', '.join(changes)}")
    kind, result = outcome(run_files, tiny.package(q, x, sealed=False), device, seconds=20)
    event(f"{op}: {kind}")
    if kind == "ok":
        _, files = result
        got = np.load(io.BytesIO(files["output.npy"]), allow_pickle=False)
        ran = graph_from_files(tiny.package(q, x, sealed=False))  # the graph as the server read it
        want = outcome(reference.forward, ran, x, seconds=20, errors=(Exception,))
        assert want[0] == "ok", f"the package ran, but the numpy reference cannot: {want[1]} ({changes})"
        assert got.shape == want[1].shape and np.array_equal(got, want[1]), \
            f"{op} computed other values than the numpy reference ({changes})"
    elif not changes:
        raise AssertionError(f"a valid {op} package was refused: {result}")


OPS = ["quantize", "conv", "dense", "add", "mul", "lut", "muladd", "maxpool", "avgpool", "avgpool2d", "concat",
       "gather", "softmax", "layernorm", "reshape"]


@pytest.mark.parametrize("op", OPS)
@EXAMPLES
@given(data=st.data())
def test_hostile_package_for_every_cpu_kernel(device, op, data):
    fuzz_one(device, data, op)


@EXAMPLES
@given(data=st.data(), first=st.integers(-2**31, 2**31 - 1), size_in=st.integers(1, 64))
def test_gather_indices_anywhere(device, data, first, size_in):
    """The kernel the issue found reading the heap: indices from anywhere in int32."""
    size_out = data.draw(st.integers(1, 64))
    q = tiny.gather_graph(first, size_in, size_out)
    x = np.linspace(-3, 3, size_in, dtype=np.float32).reshape(1, size_in)
    kind, result = outcome(run_files, tiny.package(q, x, sealed=False), device)
    inside = int(q.node("g").attrs["index"].max()) < size_in
    event(f"gather {kind}")
    if kind == "ok":
        got = np.load(io.BytesIO(result[1]["output.npy"]))
        assert np.array_equal(got, reference.forward(q, x))
    else:
        assert not inside and "index" in result


# --- every kernel family directly: the specs a board rebuilds from libvdla_cpu.json -----------
def _base_specs():
    from tests.compiler.cpu_fallback.arm_cases import _generated, _network_kernels

    specs = {}
    for spec in _generated() + _network_kernels():
        specs.setdefault(spec.family, spec)
    return specs


BASES = _base_specs()
INDEX_LIKE = {("gather", "index"), ("avgpool2d", "count"), ("avgpool2d", "add"), ("softmax", "table"),
              ("conv2d", "shift"), ("dense", "shift"), ("layernorm", "mul"), ("layernorm", "add")}
RUN_BYTES = 1 << 20  # specs this small are also run


def _reference(spec, inputs):
    from tests.compiler.cpu_fallback import numpy_ref
    from tests.compiler.cpu_fallback.spec_reference import reference_of

    if spec.family == "pack":
        return numpy_ref.pack(inputs[0], spec.batch, spec.block)
    if spec.family == "unpack":
        return numpy_ref.unpack(inputs[0], spec.n, spec.c)
    return reference_of(spec, inputs)


def test_every_family_has_a_base():
    import compiler.cpu_fallback as cf

    assert set(BASES) == set(cf.FAMILIES)


@pytest.mark.parametrize("family", sorted(BASES))
@EXAMPLES
@given(data=st.data())
def test_hostile_kernel_parameters_and_buffers(family, data):
    """Parameters as libvdla_cpu.json gives them (any JSON value), then buffers with hostile
    index-like values: a clean KernelError (a VdlaError), or the numpy reference's output."""
    import dataclasses

    import compiler.cpu_fallback as cf
    from tests.compiler.cpu_fallback import numpy_ref

    params = {f.name: getattr(BASES[family], f.name) for f in dataclasses.fields(BASES[family])}
    changed = data.draw(st.lists(st.sampled_from(sorted(params)), max_size=2, unique=True))
    for name in changed:
        params[name] = hostile_value(data.draw, params[name])
    kind, spec = outcome(cf.FAMILIES[family], **params)
    event(f"{family}: spec {kind}")
    if kind != "ok":
        return
    kind, _ = outcome(spec.check_limits)
    if kind != "ok" or sum(a.nbytes for a in spec.args()) > RUN_BYTES:
        event(f"{family}: not run ({kind})")
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 9)))
    inputs = numpy_ref.random_inputs(spec, rng)
    names = [a.name for a in spec.args() if a.is_input]
    if family == "avgpool2d":  # random_inputs' constant terms are for its own windows
        lo, hi = spec.add_range()
        inputs[names.index("add")] = rng.integers(lo, min(hi, 4000) + 1, (spec.oh, spec.ow)).astype(np.int32)
    hostile = [n for n in names if (family, n) in INDEX_LIKE and data.draw(st.booleans())]
    for name in hostile:
        array = inputs[names.index(name)]
        array.flat[data.draw(st.integers(0, array.size - 1))] = data.draw(
            st.sampled_from([v for v in EXTREME if np.iinfo(array.dtype).min <= v <= np.iinfo(array.dtype).max]))
    kernel = outcome(cf.host_jit().kernel, spec, seconds=30)[1]
    kind, got = outcome(kernel, *inputs)
    event(f"{family}: run {kind}")
    if kind == "ok":
        want = _reference(spec, inputs)
        assert np.array_equal(got.reshape(want.shape), want), f"{family} differs from numpy ({changed}, {hostile})"
    else:
        assert hostile, f"a valid {family} call was refused: {got}"
