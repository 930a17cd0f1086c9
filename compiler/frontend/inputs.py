"""Deterministic synthetic input images for calibration and tests (nothing is downloaded).

iid noise images all look alike to a convolutional network (its pooled features converge to
the same mean), so these images carry structure that differs from image to image: a smooth
random field (low-resolution noise upsampled), a per-image colour cast, and fine noise;
normalised per channel like ImageNet inputs.
"""

from __future__ import annotations

import numpy as np


def synthetic_images(count: int, resolution: int, seed: int = 0, channels: int = 3, width: int | None = None) -> np.ndarray:
    """(count, channels, resolution, width or resolution) float32 images with distinct global structure.

    Built one image at a time in float64 (the fine noise drawn image by image continues the same
    random stream as one draw of all), so the host holds the float32 result and one image's
    float64 temporaries, not several float64 copies of the whole batch (10 times the result, 5.5 GB for four
    1 x 5792 x 5792 images, the largest input vdla_hw.limits.MAX_TENSOR_BYTES admits)."""
    height, width = resolution, width or resolution
    rng = np.random.default_rng(seed)
    coarse_h, coarse_w = max(2, height // 16), max(2, width // 16)
    field = rng.standard_normal((count, channels, coarse_h, coarse_w))
    reps_h, reps_w = -(-height // coarse_h), -(-width // coarse_w)
    cast = rng.standard_normal((count, channels, 1, 1))
    images = np.empty((count, channels, height, width), np.float32)
    for k in range(count):
        image = np.repeat(np.repeat(field[k], reps_h, axis=1), reps_w, axis=2)[:, :height, :width]
        image = image + cast[k]
        image += 0.3 * rng.standard_normal((channels, height, width))
        std = image.std()
        image -= image.mean(axis=(1, 2), keepdims=True) * 0.5
        image /= std
        images[k] = image
    return images


def synthetic_inputs(count: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """``count`` model inputs of ``shape`` (batch first): synthetic images for NCHW models, seeded
    standard normal values for any other shape."""
    batch, sample = shape[0], tuple(shape[1:])
    if len(shape) == 4:
        images = synthetic_images(count * batch, sample[1], seed, sample[0], sample[2])
    else:
        images = np.random.default_rng(seed).standard_normal((count * batch,) + sample).astype(np.float32)
    return images
