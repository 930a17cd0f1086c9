"""Layer descriptions the accelerator compiler accepts: quantized conv2d and dense.

A layer is a small frozen value; :meth:`check` validates it against a configuration and raises
:class:`LayerError` naming the layer and the field. Both layers end in the same
requantization::

    y = clip((acc + bias) >> shift, lo, hi)       lo = clip_lo, else 0 with relu, else -128; hi = clip_hi (127)

``shift`` is one amount, or with ``per_channel_shift`` a (O,) int32 tensor ``shift`` (loaded into
ACC beside the bias; the ALU shifts each output channel by its own amount).

with ``acc`` the int32 sum of int8 products and ``>>`` an arithmetic shift. Tensors: conv2d
input NCHW int8, weights OIHW int8, bias (O,) int32, output NCHW int8; dense input (N, I) int8,
weights (O, I) int8, bias (O,) int32, output (N, O) int8. A dense layer compiles as the 1x1
convolution whose pixels are the batch rows (:meth:`Dense.as_conv2d`).
"""

from __future__ import annotations

import dataclasses

from vdla_hw import isa
from vdla_hw.config import Config
from vdla_hw.errors import VdlaError
from vdla_hw.limits import MAX_DRAM_BYTES, mib

OUT_MAX = 127


class LayerError(VdlaError):
    """A layer description or its tensors do not fit the accelerator or are malformed."""

    def __init__(self, layer: str, field: str, why: str):
        self.layer, self.field, self.why = layer, field, why
        super().__init__(f"layer {layer}: {field}: {why}")


def _lo(layer) -> int:
    if layer.clip_lo is not None:
        return layer.clip_lo
    return 0 if layer.relu else -(OUT_MAX + 1)


def _check_clip(layer) -> None:
    for field in ("clip_lo", "clip_hi"):
        value = getattr(layer, field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not -(OUT_MAX + 1) <= value <= OUT_MAX):
            raise LayerError(layer.name, field, f"must be an integer in [-128, 127], got {value!r}")
    if _lo(layer) > layer.clip_hi:
        raise LayerError(layer.name, "clip_hi", f"{layer.clip_hi} is below the lower bound {_lo(layer)}")


def _positive(layer: str, **values) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise LayerError(layer, name, f"must be a positive integer, got {value!r}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Conv2D:
    """Quantized 2-D convolution, square kernel: NCHW int8 in, OIHW int8 weights, int32 bias."""

    name: str = "conv2d"
    n: int = 1
    h: int
    w: int
    ic: int
    oc: int
    k: int
    stride: int = 1
    pad: int = 0
    shift: int = 0
    relu: bool = False
    clip_lo: int | None = None  # clip bounds of the requantization (default: ``lo``/127)
    clip_hi: int = OUT_MAX
    per_channel_shift: bool = False  # shift by a (O,) int32 tensor ``shift`` instead of ``shift``

    def __post_init__(self):
        _positive(self.name, n=self.n, h=self.h, w=self.w, ic=self.ic, oc=self.oc, k=self.k, stride=self.stride)
        if isinstance(self.pad, bool) or not isinstance(self.pad, int) or self.pad < 0:
            raise LayerError(self.name, "pad", f"must be a non-negative integer, got {self.pad!r}")
        if isinstance(self.shift, bool) or not isinstance(self.shift, int) or not 0 <= self.shift <= 31:
            raise LayerError(self.name, "shift", f"must be an integer in [0, 31], got {self.shift!r}")
        _check_clip(self)
        if self.h + 2 * self.pad < self.k or self.w + 2 * self.pad < self.k:
            raise LayerError(self.name, "k", f"kernel {self.k} is larger than the padded input "
                             f"{self.h + 2 * self.pad}x{self.w + 2 * self.pad}")

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.k) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.k) // self.stride + 1

    @property
    def lo(self) -> int:
        """Lower clip bound of the requantization."""
        return _lo(self)

    @property
    def hi(self) -> int:
        """Upper clip bound of the requantization."""
        return self.clip_hi

    @property
    def macs(self) -> int:
        return self.n * self.oc * self.oh * self.ow * self.ic * self.k * self.k

    @property
    def ops(self) -> int:
        return 2 * self.macs

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.ic, self.h, self.w)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (self.oc, self.ic, self.k, self.k)

    @property
    def bias_shape(self) -> tuple[int, ...]:
        return (self.oc,)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.n, self.oc, self.oh, self.ow)

    def check(self, config: Config) -> None:
        """Raise LayerError unless the layer can be expressed in ``config``'s instructions."""
        pad_bits = isa.layout("LOAD", config)["y_pad_top"].width
        if self.pad > (1 << pad_bits) - 1:
            raise LayerError(self.name, "pad", f"{self.pad} exceeds the {pad_bits}-bit LOAD pad fields "
                             f"(at most {(1 << pad_bits) - 1})")
        stride_max = isa.layout("LOAD", config)["x_stride"].high
        if self.w * self.stride > stride_max:
            raise LayerError(self.name, "w", f"row pitch {self.w * self.stride} exceeds the LOAD x_stride "
                             f"field (at most {stride_max})")
        nbytes = self.dram_bytes(config)
        if nbytes > MAX_DRAM_BYTES:
            raise LayerError(self.name, "size", f"its packed input, weights, bias and output need {mib(nbytes)} of "
                             f"DRAM, more than the {mib(MAX_DRAM_BYTES)} a device image may hold "
                             "(vdla_hw/limits.py); split the layer or use a smaller input")

    def dram_bytes(self, config: Config) -> int:
        """Bytes of the packed tensors in the layer's DRAM image (without uops and instructions):
        a lower bound on its bundle's image, computed before anything is allocated."""
        nb, icb, ocb = (-(-self.n // config.batch), -(-self.ic // config.block_in), -(-self.oc // config.block_out))
        inp = nb * icb * self.h * self.w * config.elem_bytes("inp")
        wgt = ocb * icb * self.k * self.k * config.elem_bytes("wgt")
        bias = nb * ocb * config.elem_bytes("acc")
        out = nb * ocb * self.oh * self.ow * config.elem_bytes("out")
        return inp + wgt + bias + out

    def as_conv2d(self) -> Conv2D:
        return self

    def describe(self) -> dict:
        return {"op": "conv2d", **dataclasses.asdict(self)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Dense:
    """Quantized dense (fully connected) layer: (N, I) int8 in, (O, I) int8 weights, int32 bias."""

    name: str = "dense"
    n: int = 1
    ic: int
    oc: int
    shift: int = 0
    relu: bool = False
    clip_lo: int | None = None
    clip_hi: int = OUT_MAX
    per_channel_shift: bool = False

    def __post_init__(self):
        _positive(self.name, n=self.n, ic=self.ic, oc=self.oc)
        if isinstance(self.shift, bool) or not isinstance(self.shift, int) or not 0 <= self.shift <= 31:
            raise LayerError(self.name, "shift", f"must be an integer in [0, 31], got {self.shift!r}")
        _check_clip(self)

    @property
    def lo(self) -> int:
        return _lo(self)

    @property
    def hi(self) -> int:
        return self.clip_hi

    @property
    def macs(self) -> int:
        return self.n * self.oc * self.ic

    @property
    def ops(self) -> int:
        return 2 * self.macs

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.ic)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        return (self.oc, self.ic)

    @property
    def bias_shape(self) -> tuple[int, ...]:
        return (self.oc,)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.n, self.oc)

    def as_conv2d(self) -> Conv2D:
        """The equivalent 1x1 convolution over a 1 x N image (batch rows become pixels)."""
        return Conv2D(name=self.name, n=1, h=1, w=self.n, ic=self.ic, oc=self.oc, k=1,
                      shift=self.shift, relu=self.relu, clip_lo=self.clip_lo, clip_hi=self.clip_hi,
                      per_channel_shift=self.per_channel_shift)

    def check(self, config: Config) -> None:
        self.as_conv2d().check(config)

    def describe(self) -> dict:
        return {"op": "dense", **dataclasses.asdict(self)}


Layer = Conv2D | Dense


def layer_from_dict(data: dict) -> Layer:
    """Inverse of ``describe()`` (as stored in a bundle's meta)."""
    data = dict(data)
    op = data.pop("op", None)
    if op == "conv2d":
        return Conv2D(**data)
    if op == "dense":
        return Dense(**data)
    raise VdlaError(f"unknown layer op {op!r} (known: conv2d, dense)")
