"""Shared check of the front-end tests: a float graph quantized, placed and run on the simulator
gives the int8 reference's bits."""

import numpy as np

from compiler.frontend.inputs import synthetic_images
from compiler.network.executor import execute
from compiler.network.partition import PartitionOptions, partition
from compiler.quantize import quantize_graph, reference
from driver import open_device


def run_int8(graph, size: int, **quantize_options):
    """(q, placements, x, result) of ``graph`` quantized on two synthetic ``size`` images and run
    on one more; asserts the run is bit-exact with ``reference.forward_all`` (every output)."""
    q = quantize_graph(graph, synthetic_images(2, size, 1), **quantize_options)
    device = open_device("sim", "osdi18")
    placements = partition(q, device.config, PartitionOptions())
    x = synthetic_images(1, size, 2)
    result = execute(q, x, placements, device)
    want = reference.forward_all(q, x)
    assert len(result.outputs) == len(want) == len(q.outputs)
    assert all(np.array_equal(got, w) for got, w in zip(result.outputs, want))
    return q, placements, x, result
