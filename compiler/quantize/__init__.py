"""Post-training int8 quantization with power-of-two scales.

``quantize_graph(graph, calibration)`` turns a float graph into a :class:`QGraph` whose
requantizations are a shift and a clip; ``reference.run`` interprets it in plain numpy (the
definition every execution of the network is checked against, bit for bit); ``report`` measures
per-layer error and top-1 agreement against the float model.
"""

from compiler.quantize.calibrate import quantize_graph
from compiler.quantize.qgraph import QGraph, QNode

__all__ = ["QGraph", "QNode", "quantize_graph"]
