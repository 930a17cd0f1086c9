"""Front end: float models in (ONNX files or the built-in ResNet builders) as a small graph IR.

``load_onnx(path, input_shape)`` imports a float ONNX model (opsets 13-21, older ones
converted; external data; constants folded with onnx's reference evaluator, shapes from onnx's shape inference);
``resnet.build_resnet(depth, resolution)`` writes ResNet-18/34 (torchvision layout) as ONNX with
deterministic random weights (``resnet.resnet_graph``: the same model as a graph, without onnx); ``float_ref.run(graph, x)`` executes a graph in float numpy.
"""

from compiler.frontend.graph import Graph, ModelError, Node
from compiler.frontend.onnx_import import from_model, load_onnx

__all__ = ["Graph", "ModelError", "Node", "from_model", "load_onnx"]
