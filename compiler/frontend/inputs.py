"""Deterministic synthetic input images for calibration and tests (nothing is downloaded).

iid noise images all look alike to a convolutional network (its pooled features converge to
the same mean), so these images carry structure that differs from image to image: a smooth
random field (low-resolution noise upsampled), a per-image colour cast, and fine noise;
normalised per channel like ImageNet inputs.
"""

from __future__ import annotations

import numpy as np


def synthetic_images(count: int, resolution: int, seed: int = 0, channels: int = 3) -> np.ndarray:
    """(count, channels, resolution, resolution) float32 images with distinct global structure."""
    rng = np.random.default_rng(seed)
    coarse = max(2, resolution // 16)
    field = rng.standard_normal((count, channels, coarse, coarse))
    reps = -(-resolution // coarse)
    smooth = np.kron(field, np.ones((1, 1, reps, reps)))[:, :, :resolution, :resolution]
    cast = rng.standard_normal((count, channels, 1, 1))
    fine = 0.3 * rng.standard_normal((count, channels, resolution, resolution))
    images = smooth + cast + fine
    images = (images - images.mean(axis=(2, 3), keepdims=True) * 0.5) / images.std(axis=(1, 2, 3), keepdims=True)
    return images.astype(np.float32)
