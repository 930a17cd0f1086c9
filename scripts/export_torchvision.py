#!/usr/bin/env python3
"""Export a torchvision classifier to ONNX the way today's PyTorch does by default.

Needs torch and torchvision (not project dependencies; use a separate venv, see docs/onnx.md):

    python scripts/export_torchvision.py resnet18 -o models/resnet18.onnx
    python scripts/export_torchvision.py mobilenet_v2 --size 160x224 -o models/mobilenet_v2_160x224.onnx
    python scripts/export_torchvision.py resnet50 --weights DEFAULT -o models/resnet50.onnx   # downloads
    python scripts/export_torchvision.py fcn_resnet50 --size 224x224 -o models/fcn_resnet50.onnx
    python scripts/export_torchvision.py resnet18_fpn -o models/resnet18_fpn.onnx
    python scripts/export_torchvision.py resnet18 --legacy --opset 11 -o models/resnet18_opset11.onnx
    python scripts/export_torchvision.py --all models/    # every network docs/onnx.md lists

Segmentation models (``fcn_resnet50``, ``lraspp_mobilenet_v3_large``, ...) export their ``out``
map (no auxiliary head, no downloaded backbone); ``resnet<N>_fpn`` is torchvision's
``resnet_fpn_backbone`` with its five feature maps as five outputs (``0`` to ``3`` and ``pool``),
with ordinary BatchNorm in place of the frozen one so its statistics can be set as below.

``torch.onnx.export`` is called with its defaults (PyTorch >= 2.9: the dynamo exporter, opset 18,
weights in ``<name>.onnx.data``); ``--legacy`` uses the TorchScript exporter instead.
Without ``--weights`` the weights are torchvision's random initialisation (seeded), and every
BatchNorm gets running statistics measured on seeded smooth random images (a data-dependent
initialisation, so activations keep a realistic range and BN is not the identity), plus random
affine parameters. Prints the file written and the model's float output on one test image.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def smooth_images(count: int, height: int, width: int, seed: int):
    """Seeded (count, 3, H, W) images with structure at several scales, normalised like ImageNet."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    coarse = torch.randn(count, 3, max(2, height // 16), max(2, width // 16), generator=gen)
    smooth = torch.nn.functional.interpolate(coarse, size=(height, width), mode="bilinear", align_corners=False)
    images = smooth + torch.randn(count, 3, 1, 1, generator=gen) + 0.3 * torch.randn(count, 3, height, width, generator=gen)
    return (images - images.mean(dim=(2, 3), keepdim=True) * 0.5) / images.std(dim=(1, 2, 3), keepdim=True)


def set_batchnorm_statistics(model, images, seed: int) -> None:
    """Running mean/var of every BatchNorm measured on ``images``; random gamma/beta."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the batches below
        with torch.no_grad():
            bn.weight.copy_(1.0 + 0.1 * torch.randn(bn.num_features, generator=gen))
            bn.bias.copy_(0.1 * torch.randn(bn.num_features, generator=gen))
    model.train()
    with torch.no_grad():
        for batch in images.split(8):
            model(batch)
    model.eval()


# --all: (file stem, model, size, extra options); the networks docs/onnx.md and issue 27 name
ALL = [
    ("efficientnet_b0", "efficientnet_b0", "224x224", []),
    ("mobilenet_v3_small", "mobilenet_v3_small", "224x224", []),
    ("regnet_y_400mf", "regnet_y_400mf", "224x224", []),
    ("shufflenet_v2_x1_0", "shufflenet_v2_x1_0", "224x224", []),
    ("densenet121", "densenet121", "224x224", []),
    ("inception_v3", "inception_v3", "299x299", []),
    ("lraspp_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "224x224", []),
    ("fcn_resnet50", "fcn_resnet50", "224x224", []),
    ("resnet18_fpn", "resnet18_fpn", "224x224", []),
    ("resnet18_opset11", "resnet18", "224x224", ["--legacy", "--opset", "11"]),
]


def as_tuple(model, keys):
    """``model`` (whose forward returns a dict) as a module returning ``out[k]`` for ``keys``: ONNX outputs."""
    import torch

    class Outputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            out = self.inner(x)
            return tuple(out[k] for k in keys)

    return Outputs()


def build(name: str):
    """(model, output names) for a torchvision model name, a segmentation model or resnet<N>_fpn."""
    import torch
    import torchvision
    from torchvision.models import segmentation

    if name.endswith("_fpn"):
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

        backbone = resnet_fpn_backbone(backbone_name=name[:-4], weights=None, norm_layer=torch.nn.BatchNorm2d,
                                       trainable_layers=5)
        keys = ["0", "1", "2", "3", "pool"]
        return as_tuple(backbone, keys), [f"p{k}" for k in keys]
    if name in torchvision.models.list_models(module=segmentation):
        model = torchvision.models.get_model(name, weights=None, weights_backbone=None, aux_loss=False)
        return as_tuple(model, ["out"]), ["out"]
    model = torchvision.models.get_model(name, weights=None)
    return model, ["logits"]


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--all"]:
        if len(argv) != 2:
            print("export_torchvision: usage: --all FOLDER", file=sys.stderr)
            return 2
        folder = Path(argv[1])
        for stem, name, size, extra in ALL:
            target = folder / f"{stem}.onnx"
            if target.exists():
                print(f"{target}: exists, kept", file=sys.stderr)
                continue
            status = main([name, "--size", size, "-o", str(target), *extra])
            if status:
                return status
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a torchvision.models name (resnet18, mobilenet_v2, fcn_resnet50, ...) "
                                      "or resnet<N>_fpn")
    parser.add_argument("-o", "--output", required=True, help="ONNX file to write")
    parser.add_argument("--size", default="224x224", help="input HxW (default 224x224)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--weights", default=None, help="torchvision weights name (e.g. DEFAULT; downloads)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--legacy", action="store_true", help="use the TorchScript exporter (dynamo=False)")
    parser.add_argument("--opset", type=int, default=None, help="opset (default: the exporter's)")
    args = parser.parse_args(argv)
    try:
        import torch
        import torchvision
    except ImportError:
        print("export_torchvision: needs torch and torchvision (pip install torch torchvision)", file=sys.stderr)
        return 2
    height, width = (int(v) for v in args.size.lower().split("x"))
    torch.manual_seed(args.seed)
    if args.weights is not None:
        model, output_names = torchvision.models.get_model(args.model, weights=args.weights), ["logits"]
    else:
        model, output_names = build(args.model)
        set_batchnorm_statistics(model, smooth_images(32, height, width, args.seed + 100), args.seed)
    model.eval()
    x = smooth_images(args.batch, height, width, args.seed + 200)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    options = {"dynamo": False} if args.legacy else {}
    if args.opset:
        options["opset_version"] = args.opset
    torch.onnx.export(model, (x,), str(out), input_names=["input"], output_names=output_names, **options)
    with torch.no_grad():
        y = model(x)
    y = y[0] if isinstance(y, tuple) else y
    y = y.reshape(y.shape[0], -1)
    print(f"wrote {out} ({args.model}, input {tuple(x.shape)}, torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}); first output[0, :4] = {y[0, :4].tolist()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
