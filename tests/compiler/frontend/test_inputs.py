"""Synthetic calibration inputs: their memory (issue 45, finding 2: calibration allocated before
any bound; the images were built as several float64 copies of the whole batch, 10 times the
float32 result, 5.5 GB for four of the largest inputs the tensor limit admits)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from compiler.frontend.inputs import synthetic_images


def test_synthetic_images_hold_one_image_of_temporaries():
    """Peak allocation at most 3 times the float32 result (the result plus one image's float64
    temporaries: about 2 for four images; the batch-wide build was 10)."""
    tracemalloc.start()
    try:
        images = synthetic_images(4, 256, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * images.nbytes, f"peak {peak / images.nbytes:.1f} x the result"


def test_synthetic_images_are_normalised_and_differ():
    images = synthetic_images(3, 64, seed=0)
    assert images.dtype == np.float32 and images.shape == (3, 3, 64, 64)
    assert np.allclose(images.std(axis=(1, 2, 3)), 1.0, atol=0.2)
    assert not np.allclose(images[0], images[1])
