"""Deterministic synthetic input images for calibration and tests (nothing is downloaded).

iid noise images all look alike to a convolutional network (its pooled features converge to
the same mean), so these images carry structure that differs from image to image: a smooth
random field (low-resolution noise upsampled), a per-image colour cast, and fine noise;
normalised per channel like ImageNet inputs.
"""

from __future__ import annotations

import numpy as np


BLOCK = 1 << 16  # float64 elements a temporary of synthetic_images holds (512 KiB), whatever the image


def synthetic_images(count: int, resolution: int, seed: int = 0, channels: int = 3, width: int | None = None) -> np.ndarray:
    """(count, channels, resolution, width or resolution) float32 images with distinct global
    structure: :func:`image_stream`'s images, stacked."""
    width = width or resolution
    images = np.empty((count, channels, resolution, width), np.float32)
    for _ in _images(count, resolution, seed, channels, width, images):
        pass
    return images


def image_stream(count: int, resolution: int, seed: int = 0, channels: int = 3, width: int | None = None):
    """The ``count`` images of :func:`synthetic_images` one at a time ((channels, resolution, width)
    float32 each; stopping early makes only those asked for: image k depends on the images before
    it only through the random stream, whose first draws are every image's field and cast).

    Each image is computed in float64 in place: the smooth field copied in a block of rows at a
    time, the fine noise drawn a block of rows at a time (continuing the same random stream as one
    draw of all), its std summed block by block in numpy's own pairwise order
    (:func:`_pairwise_sumsq`), so the values are bit for bit those of whole-array numpy and the host
    holds one image in float64 (twice the image's float32 bytes) and no other temporary larger
    than :data:`BLOCK` elements (issue 45: whole-image temporaries were six times an image,
    768 MiB for a 1 x 5792 x 5792 input)."""
    yield from _images(count, resolution, seed, channels, width, None)


def _images(count: int, resolution: int, seed: int, channels: int, width: int | None, into):
    """:func:`image_stream`'s images, each made in a float64 buffer freed before it is given:
    written into ``into[k]`` (yielding None), or yielded as float32 when ``into`` is None (so a
    consumer of the stream holds no float64 buffer while it works on an image)."""
    height, width = resolution, width or resolution
    rng = np.random.default_rng(seed)
    coarse_h, coarse_w = max(2, height // 16), max(2, width // 16)
    field = rng.standard_normal((count, channels, coarse_h, coarse_w))
    reps_h, reps_w = -(-height // coarse_h), -(-width // coarse_w)
    cast = rng.standard_normal((count, channels, 1, 1))
    rows_of, cols_of = np.arange(height) // reps_h, np.arange(width) // reps_w
    step = max(1, BLOCK // width)
    for k in range(count):
        image = np.empty((channels, height, width))
        for top in range(0, height, step):
            image[:, top:top + step] = field[k][:, rows_of[top:top + step]][:, :, cols_of]
        image += cast[k]
        for c in range(channels):
            for top in range(0, height, step):
                image[c, top:top + step] += 0.3 * rng.standard_normal((min(step, height - top), width))
        flat = image.reshape(-1)
        std = np.sqrt(_pairwise_sumsq(flat, _pairwise_sum(flat) / flat.size) / flat.size)
        image -= image.mean(axis=(1, 2), keepdims=True) * 0.5
        image /= std if std > 0 else 1.0  # a constant image (one pixel) stays finite
        if into is not None:
            into[k], out = image, None
        else:
            out = image.astype(np.float32)
        del image, flat
        yield out
        out = None  # the next image is made holding none of this one


def _pairwise_sum(x: np.ndarray):
    """``np.add.reduce(x)`` of a contiguous 1-D float64 array, bit for bit: numpy sums by halves
    (cut at a multiple of 8) down to its blocks, so summing each half alone is the same sum."""
    if x.size <= BLOCK:
        return np.add.reduce(x)
    half = x.size // 2 - x.size // 2 % 8
    return _pairwise_sum(x[:half]) + _pairwise_sum(x[half:])


def _pairwise_sumsq(x: np.ndarray, mean):
    """``np.add.reduce((x - mean) ** 2)`` bit for bit (what ``np.std`` sums), a block at a time."""
    if x.size <= BLOCK:
        d = x - mean
        return np.add.reduce(np.multiply(d, d, out=d))
    half = x.size // 2 - x.size // 2 % 8
    return _pairwise_sumsq(x[:half], mean) + _pairwise_sumsq(x[half:], mean)


def synthetic_inputs(count: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """``count`` model inputs of ``shape`` (batch first), stacked: :func:`input_stream`'s."""
    batch, sample = shape[0], tuple(shape[1:])
    inputs = np.empty((count * batch,) + sample, np.float32)
    for k, x in enumerate(input_stream(count, shape, seed)):
        inputs[k * batch:(k + 1) * batch] = x
    return inputs


def input_stream(count: int, shape: tuple[int, ...], seed: int = 0):
    """``count`` model inputs of ``shape`` (batch first), one at a time: synthetic images for NCHW
    models, seeded standard normal values (one sample's draw after another, the same stream as
    one draw of all) for any other shape."""
    batch, sample = shape[0], tuple(shape[1:])
    if len(shape) == 4:
        samples = image_stream(count * batch, sample[1], seed, sample[0], sample[2])
    else:
        rng = np.random.default_rng(seed)
        samples = (rng.standard_normal(sample).astype(np.float32) for _ in range(count * batch))
    for _ in range(count):
        yield next(samples)[None] if batch == 1 else np.stack([next(samples) for _ in range(batch)])
