"""Synthetic inputs made as they are read (issue 45: a run held its four test inputs in the
parent and in the quantization report's child; a 5792 x 5792 Relu's run peaked at 2.1 GB)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from compiler.frontend.inputs import synthetic_inputs
from vdla.inputs import synthetic


def test_streamed_first_and_whole_are_the_same_values():
    for shape in [(1, 3, 32, 32), (2, 3, 16, 20), (1, 10), (3, 4, 5)]:
        want = synthetic_inputs(3, shape, 4)
        streamed = synthetic(shape, 3, 4)
        assert streamed.count == 3 * shape[0] and streamed.sample_shape == tuple(shape[1:])
        assert np.array_equal(np.concatenate(list(streamed.batches(shape[0]))), want)
        first = synthetic(shape, 3, 4).first(shape[0])
        assert np.array_equal(first.array, want[:shape[0]]) and first.key[-2:] == ("first", shape[0])
        assert np.array_equal(streamed.array, want)  # made whole on demand, then read as stored
        assert np.array_equal(np.concatenate(list(streamed.batches(shape[0]))), want)


def test_reading_one_input_at_a_time_holds_one_input():
    """Four 1 x 1 x 1024 x 1024 inputs read one at a time: peak allocation one input and the
    float64 buffer it is made in (3 times an input), not the four (4 times and more)."""
    inputs = synthetic((1, 1, 1024, 1024), 4, 2)
    one = 4 * 1024 * 1024
    tracemalloc.start()
    try:
        seen = 0
        for x in inputs.batches(1):
            seen += x.shape[0]
            del x  # as the quantization report does: nothing of an input held while the next is made
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen == 4 and peak < 3.2 * one, f"{peak / one:.2f} inputs"
    assert inputs.describe() == {"source": "synthetic (seed 2, 4)", "count": 4, "shape": [1, 1024, 1024]}


def test_the_run_bounds_admit_the_built_in_resnets_and_refuse_past_them():
    """check_run_inputs: the built-in ResNets at RESNET_MAX_RESOLUTION (nine 5.7 MiB inputs) and
    the default main job pass; one input past RUN_MAX_INPUT_BYTES, or nine past
    RUN_MAX_MADE_BYTES, are refused naming the limit (nothing is made: it counts shapes)."""
    import pytest

    from vdla.inputs import InputError, check_run_inputs
    from vdla_hw.limits import RESNET_MAX_RESOLUTION, RUN_MAX_INPUT_BYTES

    check_run_inputs((1, 3, RESNET_MAX_RESOLUTION, RESNET_MAX_RESOLUTION), 9)
    check_run_inputs((1, 3, 224, 224), 9)
    with pytest.raises(InputError, match="RUN_MAX_INPUT_BYTES"):
        check_run_inputs((1, RUN_MAX_INPUT_BYTES // 4 + 1), 1)
    check_run_inputs((1, RUN_MAX_INPUT_BYTES // 4), 2)
    with pytest.raises(InputError, match=r"19 synthetic inputs .* RUN_MAX_MADE_BYTES"):
        check_run_inputs((1, 1, 2048, 2048), 19)
    check_run_inputs((1, 1, 2048, 2048), 18)
    check_run_inputs((1, 1, 2896, 2896), 9)


def test_a_one_pixel_image_is_finite():
    """A model of 1 x 1 images: the synthetic image is one value per channel, whose standard
    deviation is 0; it was divided by it, and every run ended in "calibration inputs contain
    NaN or infinite values"."""
    for shape in [(1, 3, 1, 1), (2, 1, 1, 1)]:
        x = synthetic_inputs(2, shape, 1)
        assert np.all(np.isfinite(x)), x
    assert np.array_equal(synthetic_inputs(2, (1, 3, 8, 8), 1), synthetic_inputs(2, (1, 3, 8, 8), 1))


def test_the_largest_tensor_made_once_per_input_is_bounded_like_an_input():
    """check_run_tensors: the graph's largest tensor (here an inner one, larger than the input)
    made by each synthetic input counts against RUN_MAX_MADE_BYTES as inputs do, and the
    refusal names the tensor; the built-in ResNet-18 at 224 and the default nine inputs pass."""
    import pytest

    from vdla.inputs import InputError, check_run_tensors
    from vdla.network import load_model

    shapes = {"x": (1, 1, 1, 1), "big": (1, 1, 2048, 2048), "y": (1, 1, 2048, 2048)}
    check_run_tensors(shapes, 18)
    with pytest.raises(InputError, match=r"19 synthetic inputs make tensor big of shape \(1, 1, 2048, 2048\) 19 "
                                         r"times, 304 MiB .* RUN_MAX_MADE_BYTES"):
        check_run_tensors(shapes, 19)
    check_run_tensors(load_model("resnet18", 224).shapes, 9)
