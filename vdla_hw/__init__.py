"""The accelerator described once: configuration, ISA, register map, program bundles,
reference semantics (and, in ``vdla_hw.rtl``, the MyHDL RTL). Imports nothing else of the
project and never imports MyHDL from these spec modules."""

from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.config import ISA_VERSION, Config, load_config
from vdla_hw.errors import VdlaError

__all__ = ["Bundle", "BundleBuilder", "Config", "ISA_VERSION", "VdlaError", "load_config"]
