"""Model inputs from files: images (PNG/JPEG/... through Pillow), ``.npy``/``.npz`` arrays, and
the synthetic images used when none are given.

Images are prepared as torchvision's classification presets do (``Resize(256)`` then
``CenterCrop(224)`` for a 224x224 model): scaled, keeping the aspect ratio, so that the model's
H x W is covered with a margin of 256/224, centre-cropped to H x W, converted to [0, 1] floats
and normalised per channel (``--normalize``: ``imagenet`` = torchvision's ImageNet mean and std,
``none``, or ``M1,M2,M3/S1,S2,S3``). Arrays are float inputs already prepared: one sample of the
model's input shape (with or without the batch axis) or a stack of them.
"""

from __future__ import annotations

import argparse
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from compiler.frontend.inputs import input_stream, synthetic_inputs
from vdla_hw.errors import BundleError, VdlaError
from vdla_hw.files import read_capped, read_checked
from vdla_hw.limits import MAX_IMAGE_FILE_BYTES, MAX_TENSOR_BYTES, RUN_MAX_INPUT_BYTES, RUN_MAX_MADE_BYTES, mib
from vdla_hw.npyfile import NPY_MAGIC, ZIP_MAGIC, read_npy, read_npz

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
ARRAY_SUFFIXES = (".npy", ".npz")
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
RESIZE_MARGIN = 256 / 224  # torchvision: Resize(256) before CenterCrop(224)
MAX_FILES = 10_000
# A set of inputs held at once (the calibration inputs, the test inputs), from any source: an
# array file, a folder of images or synthetic inputs. A stack of a few of the largest tensors, so
# a run holds its sets read from files (two at most) and one image's few live tensors (each at most
# MAX_TENSOR_BYTES); synthetic sets are made one input at a time as read (SyntheticInputs), bounded by
# check_run_inputs.
MAX_ARRAY_BYTES = 4 * MAX_TENSOR_BYTES


class InputError(VdlaError):
    """An input file or folder that cannot be used as the model's input."""


@dataclass(frozen=True)
class Inputs:
    """A stack of model inputs (``array``, batch axis first) and where they came from."""

    array: np.ndarray
    source: str
    names: tuple[str, ...] = ()
    # what makes ``array`` exactly, when a recipe does (synthetic inputs: count, shape, seed)
    recipe: tuple | None = None

    @property
    def key(self):
        """A cache key part naming these values exactly: the recipe of synthetic inputs (their
        values are a function of it and of the code, which every cache key holds), else the array
        itself (hashing four 128 MiB synthetic inputs took 1.6 s; issue 45)."""
        return ("recipe", *self.recipe) if self.recipe is not None else self.array

    @property
    def count(self) -> int:
        """The number of samples."""
        return len(self.array)

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape[1:])

    def batches(self, batch: int):
        """The samples ``batch`` at a time (a model's batch), or all at once if they do not divide."""
        x = self.array
        if not batch or len(x) % batch:
            yield x
            return
        for start in range(0, len(x), batch):
            yield x[start:start + batch]

    def first(self, count: int) -> "Inputs":
        """The first ``count`` samples (the executed input), with their recipe."""
        return Inputs(self.array[:count], self.source + " (the first)", self.names[:count],
                      None if self.recipe is None else (*self.recipe, "first", count))

    def held_out(self) -> tuple["Inputs", "Inputs"] | None:
        """(calibration, test) split of these inputs: the last quarter (at least one) held out
        for the quantization report, the rest to calibrate; None for fewer than two inputs."""
        n = len(self.array)
        if n < 2:
            return None
        k = n - max(1, n // 4)
        return (Inputs(self.array[:k], f"{self.source} (the first {k} of {n})", self.names[:k]),
                Inputs(self.array[k:], f"{self.source} (the last {n - k} of {n}, held out from calibration)",
                       self.names[k:]))

    def describe(self) -> dict:
        return {"source": self.source, "count": int(self.count), "shape": list(self.sample_shape),
                **({"files": list(self.names)} if self.names else {})}


class SyntheticInputs(Inputs):
    """``count`` synthetic inputs of a model of input ``shape`` (``count * shape[0]`` samples), made
    from their recipe when read (issue 45: a run held its four 128 MiB test inputs in the parent
    and again in the report's child): ``batches`` makes them one model input at a time and keeps
    none, ``first`` makes only the first, ``array`` makes them all (once, then kept). Values are
    those of ``compiler.frontend.inputs.synthetic_inputs`` either way."""

    def __init__(self, count: int, shape: tuple[int, ...], seed: int):
        shape = tuple(int(d) for d in shape)
        for name, value in (("source", f"synthetic (seed {seed}, {count})"), ("names", ()),
                            ("recipe", ("synthetic", count, list(shape), seed)), ("_shape", shape),
                            ("_made", [])):
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"SyntheticInputs({self.source!r}, shape {self._shape})"

    @property
    def array(self) -> np.ndarray:
        if not self._made:
            self._made.append(synthetic_inputs(self.recipe[1], self._shape, self.recipe[3]))
        return self._made[0]

    @property
    def count(self) -> int:
        return self.recipe[1] * self._shape[0]

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self._shape[1:]

    def batches(self, batch: int):
        if self._made or batch != self._shape[0]:
            yield from super().batches(batch)
            return
        yield from input_stream(self.recipe[1], self._shape, self.recipe[3])

    def first(self, count: int) -> Inputs:
        if self._made:
            return super().first(count)
        stream = input_stream(self.recipe[1], self._shape, self.recipe[3])
        samples = np.concatenate([next(stream) for _ in range(-(-count // self._shape[0]))])[:count]
        return Inputs(samples, self.source + " (the first)", (), (*self.recipe, "first", count))


def input_shape_arg(text: str) -> tuple[int, ...]:
    """``--input-shape``: comma-separated positive dimensions, e.g. 1,3,160,224."""
    try:
        dims = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers such as 1,3,224,224") from None
    if not dims or any(d < 1 or d > 1 << 20 for d in dims):
        raise argparse.ArgumentTypeError(f"{text!r}: every dimension must be between 1 and {1 << 20}")
    return dims


def normalize_arg(text: str):
    """``--normalize``: imagenet, none, or M1,M2,M3/S1,S2,S3 (one mean and std per channel)."""
    if text == "imagenet":
        return IMAGENET
    if text == "none":
        return None
    try:
        mean, std = (tuple(float(v) for v in part.split(",")) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not imagenet, none or M1,M2,M3/S1,S2,S3") from None
    if len(mean) != len(std) or any(s <= 0 for s in std):
        raise argparse.ArgumentTypeError(f"{text!r}: as many means as stds, every std positive")
    return mean, std


def image_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise InputError(f"{folder}: no image files ({', '.join(IMAGE_SUFFIXES)})")
    if len(files) > MAX_FILES:
        raise InputError(f"{folder}: {len(files)} images, more than {MAX_FILES}; use a smaller folder")
    return files


def load_image(path: Path, shape: tuple[int, ...], normalize) -> np.ndarray:
    """(C, H, W) float32 of one image, prepared for a model input of ``shape`` (N, C, H, W)."""
    from PIL import Image, UnidentifiedImageError

    channels, height, width = shape[1:]
    if channels not in (1, 3):
        raise InputError(f"{path}: images are RGB or greyscale, the model takes {channels} channels")
    # files.read_checked: a regular file within the limit (a FIFO named x.png hung Image.open)
    data = read_checked(path, "image file", MAX_IMAGE_FILE_BYTES, "vdla_hw.limits.MAX_IMAGE_FILE_BYTES")
    try:
        with Image.open(io.BytesIO(data)) as image:
            image = image.convert("RGB" if channels == 3 else "L")
            scale = max(height / image.height, width / image.width) * RESIZE_MARGIN
            size = (max(width, round(image.width * scale)), max(height, round(image.height * scale)))
            image = image.resize(size, Image.BILINEAR)
            left, top = (size[0] - width) // 2, (size[1] - height) // 2
            pixels = np.asarray(image.crop((left, top, left + width, top + height)), dtype=np.float32) / 255.0
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as err:
        raise InputError(f"{path}: cannot read the image ({err})") from None
    pixels = pixels.reshape(height, width, channels).transpose(2, 0, 1)
    if normalize is not None:
        mean, std = (np.asarray(v, dtype=np.float32).reshape(-1, 1, 1) for v in normalize)
        if mean.shape[0] not in (1, channels):
            raise InputError(f"--normalize gives {mean.shape[0]} means for a {channels}-channel model")
        pixels = (pixels - mean) / std
    return np.ascontiguousarray(pixels, dtype=np.float32)


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a .npy (key ``""``) or .npz file, read with bounded memory and every defect
    (not numpy, corrupt, truncated, a header announcing more than the file holds, pickles) one
    :class:`InputError` naming the file (:mod:`vdla_hw.npyfile`)."""
    data = read_capped(path, "input array file", MAX_ARRAY_BYTES)
    try:
        if data.startswith(NPY_MAGIC):
            return {"": read_npy(data, str(path))}
        if not data.startswith(ZIP_MAGIC):
            raise InputError(f"{path}: not a numpy .npy/.npz file (no .npy or zip header)")
        return read_npz(data, str(path), max_total=MAX_ARRAY_BYTES)
    except BundleError as err:
        raise InputError(str(err)) from None


def load_array(path: Path, shape: tuple[int, ...]) -> np.ndarray:
    """A stack of samples (k * batch, ...) from a .npy, or a .npz holding one array."""
    arrays = read_arrays(path)
    if len(arrays) != 1:
        raise InputError(f"{path}: the .npz holds {len(arrays)} arrays ({', '.join(list(arrays)[:5])}); "
                         "give one array of inputs")
    array, = arrays.values()
    if array.dtype.kind not in "fiu":
        raise InputError(f"{path}: holds {array.dtype} values; give float32 inputs")
    sample = tuple(shape[1:])
    if array.shape == sample:
        array = array[None]
    if array.shape[1:] != sample or array.shape[0] % shape[0] or not array.shape[0]:
        raise InputError(f"{path}: shape {array.shape} is neither the model's input {tuple(shape)} nor a stack of "
                         f"its samples (k x {shape[0]}, {', '.join(map(str, sample))})")
    array = array.astype(np.float32, copy=False)  # a float32 file's array is used as read: no second copy
    if not np.all(np.isfinite(array)):
        raise InputError(f"{path}: contains NaN or infinite values")
    return np.ascontiguousarray(array)


def load_inputs(source: str, shape: tuple[int, ...], normalize=IMAGENET) -> Inputs:
    """Inputs for a model of input ``shape`` from a folder of images, an image, or an array file."""
    path = Path(source)
    if not path.exists():
        raise InputError(f"{source}: no such file or folder")
    if path.is_dir():
        if len(shape) != 4:
            raise InputError(f"{source}: images need an NCHW model; this one takes {tuple(shape)}")
        files = image_files(path)
        check_set(len(files), shape, f"{source}: {len(files)} images")
        array = np.stack([load_image(f, shape, normalize) for f in files])
        usable = len(array) - len(array) % shape[0]
        if not usable:
            raise InputError(f"{source}: {len(array)} images, fewer than the model's batch {shape[0]}")
        return Inputs(array[:usable], f"images in {source}", tuple(f.name for f in files[:usable]))
    if path.suffix.lower() in ARRAY_SUFFIXES:
        return Inputs(load_array(path, shape), str(source))
    if path.suffix.lower() in IMAGE_SUFFIXES:
        if len(shape) != 4 or shape[0] != 1:
            raise InputError(f"{source}: one image needs an NCHW model of batch 1; this one takes {tuple(shape)}")
        return Inputs(load_image(path, shape, normalize)[None], f"image {source}", (path.name,))
    raise InputError(f"{source}: not a folder of images, an image ({', '.join(IMAGE_SUFFIXES)}) or an array "
                     f"({', '.join(ARRAY_SUFFIXES)})")


def check_set(count: int, shape: tuple[int, ...], what: str) -> None:
    """Refuse, before it is made, a set of ``count`` inputs of a model of input ``shape`` (each
    ``shape[1:]``) larger than :data:`MAX_ARRAY_BYTES` as float32 (``what`` names the set)."""
    nbytes = 4 * count * math.prod(int(d) for d in shape[1:])
    if nbytes > MAX_ARRAY_BYTES:
        raise InputError(f"{what} of shape {tuple(int(d) for d in shape[1:])} need {mib(nbytes)} as float32, more "
                         f"than the {mib(MAX_ARRAY_BYTES)} a set of inputs may hold (vdla/inputs.py MAX_ARRAY_BYTES, "
                         "4 x vdla_hw/limits.py MAX_TENSOR_BYTES); use fewer inputs or a smaller input shape")


def check_run_inputs(shape: tuple[int, ...], made: int) -> None:
    """Refuse, before any is made, a run that would make ``made`` synthetic inputs of a model of
    input ``shape`` past vdla_hw/limits.py's RUN_MAX_INPUT_BYTES (one input: the run's memory) or
    RUN_MAX_MADE_BYTES (all of them: its time)."""
    each = 4 * math.prod(int(d) for d in shape)
    where = f"synthetic inputs of shape {tuple(int(d) for d in shape)}"
    if each > RUN_MAX_INPUT_BYTES:
        raise InputError(f"{where} need {mib(each)} each as float32, more than the {mib(RUN_MAX_INPUT_BYTES)} a run "
                         f"makes of one within 512 MB and 5 s (vdla_hw/limits.py RUN_MAX_INPUT_BYTES); use a smaller input shape")
    if each * made > RUN_MAX_MADE_BYTES:
        raise InputError(f"{made} {where} need {mib(each * made)} as float32, more than the {mib(RUN_MAX_MADE_BYTES)} "
                         f"a run makes within 5 s (vdla_hw/limits.py RUN_MAX_MADE_BYTES); use a smaller input shape, "
                         f"or give the inputs: --calibration and --images (a .npy of a few)")


def check_run_tensors(shapes: dict, made: int) -> None:
    """Refuse, before any input is made, a run whose ``made`` synthetic inputs would each make the
    graph's largest tensor (of ``shapes``, one model input's values) past RUN_MAX_MADE_BYTES in
    all: every stage makes each tensor once per input it reads, so a 140-byte model Expanding a
    1 x 1 x 1 x 1 input to 32 MiB costs a run what a 32 MiB input does (the import bounds each
    tensor alone, MAX_TENSOR_BYTES). Inputs read from files are the user's own work: not counted."""
    name, shape = max(shapes.items(), key=lambda item: math.prod(int(d) for d in item[1]))  # the first such
    each = 4 * math.prod(int(d) for d in shape)
    if each * made > RUN_MAX_MADE_BYTES:
        raise InputError(f"{made} synthetic inputs make tensor {name} of shape {tuple(int(d) for d in shape)} "
                         f"{made} times, {mib(each * made)} as float32, more than the {mib(RUN_MAX_MADE_BYTES)} a run "
                         "makes within 5 s (vdla_hw/limits.py RUN_MAX_MADE_BYTES); use a smaller input shape, or give "
                         "the inputs: --calibration and --images (a .npy of a few)")


def synthetic(shape: tuple[int, ...], count: int, seed: int) -> Inputs:
    check_set(count, shape, f"{count} synthetic inputs")
    return SyntheticInputs(count, shape, seed)
