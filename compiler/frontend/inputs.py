"""Deterministic synthetic input images for calibration and tests (nothing is downloaded).

iid noise images all look alike to a convolutional network (its pooled features converge to
the same mean), so these images carry structure that differs from image to image: a smooth
random field (low-resolution noise upsampled), a per-image colour cast, and fine noise;
normalised per channel like ImageNet inputs.
"""

from __future__ import annotations

import numpy as np


def synthetic_images(count: int, resolution: int, seed: int = 0, channels: int = 3, width: int | None = None) -> np.ndarray:
    """(count, channels, resolution, width or resolution) float32 images with distinct global structure."""
    height, width = resolution, width or resolution
    rng = np.random.default_rng(seed)
    coarse_h, coarse_w = max(2, height // 16), max(2, width // 16)
    field = rng.standard_normal((count, channels, coarse_h, coarse_w))
    reps_h, reps_w = -(-height // coarse_h), -(-width // coarse_w)
    smooth = np.kron(field, np.ones((1, 1, reps_h, reps_w)))[:, :, :height, :width]
    cast = rng.standard_normal((count, channels, 1, 1))
    fine = 0.3 * rng.standard_normal((count, channels, height, width))
    images = smooth + cast + fine
    images = (images - images.mean(axis=(2, 3), keepdims=True) * 0.5) / images.std(axis=(1, 2, 3), keepdims=True)
    return images.astype(np.float32)


def synthetic_inputs(count: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """``count`` model inputs of ``shape`` (batch first): synthetic images for NCHW models, seeded
    standard normal values for any other shape."""
    batch, sample = shape[0], tuple(shape[1:])
    if len(shape) == 4:
        images = synthetic_images(count * batch, sample[1], seed, sample[0], sample[2])
    else:
        images = np.random.default_rng(seed).standard_normal((count * batch,) + sample).astype(np.float32)
    return images
