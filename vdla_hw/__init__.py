"""The accelerator described once: configuration, ISA, register map, program bundles,
reference semantics (and, in ``vdla_hw.rtl``, the MyHDL RTL). Imports nothing else of the
project and never imports MyHDL from these spec modules.

The names below load on first use (PEP 562): importing a light spec module (``vdla_hw.errors``,
``vdla_hw.limits``, ``vdla_hw.files``) does not import numpy, which keeps ``vdla --help`` fast."""

__all__ = ["Bundle", "BundleBuilder", "Config", "ISA_VERSION", "VdlaError", "load_config"]
_HOMES = {"Bundle": "vdla_hw.bundle", "BundleBuilder": "vdla_hw.bundle", "Config": "vdla_hw.config",
          "ISA_VERSION": "vdla_hw.config", "load_config": "vdla_hw.config", "VdlaError": "vdla_hw.errors"}


def __getattr__(name: str):
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'vdla_hw' has no attribute {name!r}")
