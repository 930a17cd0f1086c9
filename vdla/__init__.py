"""The user-facing layer: the ``vdla`` command and a small Python API over the packages."""

from vdla_hw import Bundle, BundleBuilder, Config, VdlaError, load_config

__all__ = ["Bundle", "BundleBuilder", "Config", "VdlaError", "load_config"]
