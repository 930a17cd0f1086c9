"""Synthetic calibration inputs: their memory (issue 45, finding 2: calibration allocated before
any bound; the images were built as several float64 copies of the whole batch, 10 times the
float32 result, 5.5 GB for four of the largest inputs the tensor limit admits)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from compiler.frontend.inputs import BLOCK, synthetic_images


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


def _whole_array_images(count, height, seed, channels, width):
    """The images as whole-array numpy computes them (the code before the images were built in
    blocks): what the blocked build must give bit for bit."""
    rng = np.random.default_rng(seed)
    coarse_h, coarse_w = max(2, height // 16), max(2, width // 16)
    field = rng.standard_normal((count, channels, coarse_h, coarse_w))
    reps_h, reps_w = -(-height // coarse_h), -(-width // coarse_w)
    cast = rng.standard_normal((count, channels, 1, 1))
    out = []
    for k in range(count):
        image = np.repeat(np.repeat(field[k], reps_h, axis=1), reps_w, axis=2)[:, :height, :width] + cast[k]
        image = image + 0.3 * rng.standard_normal((channels, height, width))
        std = image.std()
        out.append((image - image.mean(axis=(1, 2), keepdims=True) * 0.5) / std)
    return np.stack(out).astype(np.float32)


def test_blocked_images_are_bit_for_bit_the_whole_array_ones():
    """Rows in blocks, the noise drawn block by block and the std summed in numpy's pairwise order
    give the same bits (so no input, calibration or documented figure moves), including images
    larger than a block, a width past a block and sizes that are no multiple of 8 or 16."""
    for count, height, seed, channels, width in [(4, 224, 0, 3, 224), (2, 37, 5, 1, 1013), (3, 2, 1, 3, 2),
                                                 (1, 700, 7, 3, 333), (2, 17, 2, 3, BLOCK + 5)]:
        want = _whole_array_images(count, height, seed, channels, width)
        assert np.array_equal(synthetic_images(count, height, seed, channels, width), want), (count, height, width)


def test_one_large_image_holds_only_its_float64_copy():
    """One 1 x 1024 x 1024 image: peak allocation the float32 result plus one float64 image (3
    times the result) and blocks; whole-image temporaries (the std's, the noise) made it 5.25 times."""
    tracemalloc.start()
    try:
        images = synthetic_images(1, 1024, seed=1, channels=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3.2 * images.nbytes, f"peak {peak / images.nbytes:.2f} x the result"
