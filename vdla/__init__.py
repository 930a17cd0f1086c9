"""The user-facing layer: the ``vdla`` command and a small Python API over the packages.

The API names load on first use (PEP 562), so that starting the command imports only the
standard library before :func:`vdla.cli.main` takes over (an early Ctrl-C is reported cleanly).
"""

__all__ = ["Bundle", "BundleBuilder", "Config", "VdlaError", "load_config"]


def __getattr__(name: str):
    if name in __all__:
        import vdla_hw

        return getattr(vdla_hw, name)
    raise AttributeError(f"module 'vdla' has no attribute {name!r}")
