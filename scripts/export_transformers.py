#!/usr/bin/env python3
"""Export the transformer networks of issue 28's "Done when" with random weights (issue 28).

An optional helper: torch and torchvision are not dependencies of the project or its tests (the
tests build the exporters' op patterns with onnx.helper, tests/compiler/frontend/). Run it in a
scratch venv outside the repository that has torch, torchvision and onnx::

    python scripts/export_transformers.py OUT_DIR [--only NAME ...] [--dynamo]

writes, each in eval mode with its seeded random initialisation, ``torch.onnx.export(...,
dynamo=False, opset_version=17)`` with the input named ``x`` (the ``_dynamo`` ones with today's
default exporter, ``torch.onnx.export(module, args, f, dynamo=True)``, opset 18):

- ``OUT_DIR/encoder4.onnx``: ``nn.TransformerEncoder`` of 4 ``nn.TransformerEncoderLayer(d_model=256,
  nhead=4, batch_first=True)``, input (1, 64, 256);
- ``OUT_DIR/convnext_tiny.onnx`` and ``OUT_DIR/vit_b_16.onnx``: torchvision's, input (1, 3, 224, 224)
  (ViT's head, which torchvision initialises to zeros, with nn.Linear's default random initialisation);
- the sequence models a reviewer might hold out (docs/onnx.md, "Held-out sequence models"):
  ``encoder4_dynamo`` (encoder4 through dynamo=True), ``encoder4_norm_first``, ``encoder4_gelu``,
  ``encoder4_seq_first`` (``batch_first=False``, input (64, 1, 256)), ``encoder4_final_norm``
  (norm_first and a final LayerNorm), ``encoder2_d512`` (2 layers, d_model 512, 8 heads, sequence
  128), ``encoder6`` (6 layers), ``mha`` (``nn.MultiheadAttention(256, 4, batch_first=True)``
  alone, need_weights=False), and, if HF ``transformers`` is installed, ``bert4`` and
  ``bert4_dynamo``: ``BertModel(BertConfig(hidden 256, 4 layers, 4 heads, intermediate 1024,
  eager attention), add_pooling_layer=False)`` fed ``inputs_embeds`` (1, 64, 256), no mask,
  its ``last_hidden_state`` the output;
- ``encoder2_causal`` and ``encoder2_causal_dynamo`` (through dynamo=True): 2 layers, d_model 256,
  4 heads, called with ``mask=nn.Transformer.generate_square_subsequent_mask(seq), is_causal=True``
  (an additive causal mask: -inf, or torch.finfo(float32).min from dynamo).
- vision transformers a reviewer might hold out (docs/onnx.md, "Held-out vision transformers"):
  torchvision's ``vit_b_32``, ``swin_t``, ``maxvit_t``, ``swin_v2_t`` and timm's (``pip install timm``)
  ``vit_tiny_patch16_224``, ``deit_tiny_distilled_patch16_224``, ``convnext_atto``, ``levit_128s``,
  ``pvt_v2_b0`` at 224x224, ``mobilevit_xxs`` at 256x256 (LeViT's BatchNorms with weight 1 and the
  statistics of 16 random inputs: timm's initialisation makes its logits about 1e-5).

``--dynamo`` exports with torch.onnx's default exporter instead (what a user gets today) into
``OUT_DIR/NAME_dynamo.onnx``.

The encoder is exported with gradients enabled and ``is_causal`` passed as a Python value, the two
workarounds scripts/export_attention.py describes (torch's fused fast path has no ONNX export; a
traced ``is_causal`` becomes a tensor that ``scaled_dot_product_attention`` refuses).
"""

import argparse
import sys
from pathlib import Path


def encoder(layers: int, d_model: int, heads: int, final_norm: bool = False, causal: bool = False, **options):
    """``options``: nn.TransformerEncoderLayer's (batch_first True unless given); ``causal``: called
    with the square subsequent mask and is_causal=True."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layer = torch.nn.TransformerEncoderLayer(d_model=d_model, nhead=heads,
                                                     **{"batch_first": True, **options})
            # enable_nested_tensor=False: no fast-path conversion to try under tracing
            self.encoder = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False,
                                                       norm=torch.nn.LayerNorm(d_model) if final_norm else None)

        def forward(self, x):
            if causal:
                seq = x.shape[1] if options.get("batch_first", True) else x.shape[0]
                mask = torch.nn.Transformer.generate_square_subsequent_mask(seq)
                return self.encoder(x, mask=mask, is_causal=True)
            return self.encoder(x, is_causal=False)

    return Encoder()


def attention(d_model: int, heads: int):
    import torch

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = torch.nn.MultiheadAttention(d_model, heads, batch_first=True)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    return Attention()


def bert(layers: int, d_model: int, heads: int):
    import torch
    from transformers import BertConfig, BertModel

    class Bert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            config = BertConfig(hidden_size=d_model, num_hidden_layers=layers, num_attention_heads=heads,
                                intermediate_size=4 * d_model, attn_implementation="eager")
            self.bert = BertModel(config, add_pooling_layer=False)

        def forward(self, x):
            return self.bert(inputs_embeds=x).last_hidden_state

    return Bert()


DYNAMO = ("encoder4_dynamo", "bert4_dynamo", "encoder2_causal_dynamo")  # exported by torch.onnx.export's default (dynamo=True)


def models(seq: int) -> dict:
    """name -> (module factory, example input shape)."""
    def torchvision_model(name):
        def make():
            import torchvision

            model = getattr(torchvision.models, name)(weights=None)
            if name.startswith("vit"):
                # torchvision initialises ViT's head to zeros (all logits 0); a Linear's default
                # random initialisation instead, so the logits measure the network
                model.heads.head.reset_parameters()
            return model
        return make

    def timm_model(name):
        def make():
            import timm

            import torch

            model = timm.create_model(name, pretrained=False)
            if name.startswith("levit"):
                # timm zero-initialises the BatchNorm ending each of LeViT's residual branches
                # (bn_weight_init=0) and its Linears (std 0.02) shrink what passes them, against
                # BatchNorm's initial statistics (mean 0, variance 1): the logits are about 1e-5.
                # BatchNorm's default weight 1 instead, and its statistics those of 16 random inputs
                for module in model.modules():
                    if isinstance(module, torch.nn.BatchNorm1d | torch.nn.BatchNorm2d):
                        if not module.weight.any():
                            torch.nn.init.ones_(module.weight)
                        module.reset_running_stats()
                        module.momentum = None  # the cumulative average
                with torch.no_grad():
                    model.train()(torch.randn(16, 3, 224, 224))
            return model
        return make

    image = (1, 3, 224, 224)
    return {"encoder4": (lambda: encoder(4, 256, 4), (1, seq, 256)),
            "convnext_tiny": (torchvision_model("convnext_tiny"), image),
            "vit_b_16": (torchvision_model("vit_b_16"), image),
            "encoder4_dynamo": (lambda: encoder(4, 256, 4), (1, seq, 256)),
            "encoder4_norm_first": (lambda: encoder(4, 256, 4, norm_first=True), (1, seq, 256)),
            "encoder4_gelu": (lambda: encoder(4, 256, 4, activation="gelu"), (1, seq, 256)),
            "encoder4_seq_first": (lambda: encoder(4, 256, 4, batch_first=False), (seq, 1, 256)),
            "encoder4_final_norm": (lambda: encoder(4, 256, 4, final_norm=True, norm_first=True), (1, seq, 256)),
            "encoder2_d512": (lambda: encoder(2, 512, 8), (1, 2 * seq, 512)),
            "encoder6": (lambda: encoder(6, 256, 4), (1, seq, 256)),
            "mha": (lambda: attention(256, 4), (1, seq, 256)),
            "encoder2_causal": (lambda: encoder(2, 256, 4, causal=True), (1, seq, 256)),
            "encoder2_causal_dynamo": (lambda: encoder(2, 256, 4, causal=True), (1, seq, 256)),
            "bert4": (lambda: bert(4, 256, 4), (1, seq, 256)),
            "bert4_dynamo": (lambda: bert(4, 256, 4), (1, seq, 256)),
            # held-out candidates (vision transformers a reviewer would likely pick)
            **{name: (torchvision_model(name), image) for name in ("vit_b_32", "swin_t", "maxvit_t", "swin_v2_t")},
            # timm's deit_tiny_patch16_224 is vit_tiny_patch16_224's architecture: the same file
            **{name: (timm_model(name), image) for name in ("vit_tiny_patch16_224", "deit_tiny_distilled_patch16_224",
                                                            "convnext_atto", "levit_128s", "pvt_v2_b0")},
            "mobilevit_xxs": (timm_model("mobilevit_xxs"), (1, 3, 256, 256))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", default=None, help="model names (default: all)")
    parser.add_argument("--seq", type=int, default=64, help="the encoder's sequence length")
    parser.add_argument("--dynamo", action="store_true",
                        help="export with torch.onnx's default dynamo exporter (opset 18) into NAME_dynamo.onnx")
    args = parser.parse_args(argv)
    import onnx
    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    for name, (make, shape) in models(args.seq).items():
        if args.only and name not in args.only:
            continue
        if name.startswith("bert"):
            try:
                import transformers  # noqa: F401
            except ImportError:
                print(f"{name}: skipped (HF transformers is not installed)")
                continue
        torch.manual_seed(0)
        module = make().eval()
        dynamo = args.dynamo or name in DYNAMO
        path = args.out / (f"{name}_dynamo.onnx" if args.dynamo else f"{name}.onnx")
        if dynamo:
            torch.onnx.export(module, (torch.randn(*shape),), str(path), input_names=["x"],
                              output_names=["y"], external_data=False)
        else:
            torch.onnx.export(module, (torch.randn(*shape),), str(path), dynamo=False, opset_version=17,
                              input_names=["x"], output_names=["y"])
        ops = [node.op_type for node in onnx.load(str(path)).graph.node]
        print(f"{path}: {len(ops)} ops: " + ", ".join(f"{op} {ops.count(op)}" for op in sorted(set(ops))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
