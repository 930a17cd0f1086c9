"""MyHDL elaboration without reading source files for every stack frame.

MyHDL finds each block's and generator's name and locals by walking the Python stack with
``inspect.stack()`` and ``inspect.getouterframes()``; with their default context of one line,
every call reads (and for a frame whose file is not on disk, such as ``<frozen runpy>``, searches
``sys.modules`` for) the source of every frame on the stack, for every block and every generator.
That was two thirds of converting ``osdi18``'s FPGA top to Verilog. MyHDL reads only each record's
frame and function name, so :func:`light_stack` gives it those records without source context:
the elaborated design and the Verilog are the same byte for byte
(tests/rtl/test_convert.py::test_light_stack_gives_the_same_verilog).

:func:`install` points MyHDL's modules at it; call it before elaborating a block.
"""

from __future__ import annotations

import inspect
import sys
import types

# the MyHDL modules that call inspect.stack() or inspect.getouterframes() while elaborating
_CALLERS = ("myhdl._block", "myhdl._instance", "myhdl._misc", "myhdl._hdlclass")


def _records(frame) -> list[inspect.FrameInfo]:
    """``inspect.getouterframes(frame, 0)`` without looking up source files."""
    records = []
    while frame is not None:
        code = frame.f_code
        records.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None))
        frame = frame.f_back
    return records


def light_stack(context: int = 1) -> list[inspect.FrameInfo]:
    """``inspect.stack()`` of the caller, every record without source lines (``context`` ignored)."""
    return _records(sys._getframe(1))


def light_outerframes(frame, context: int = 1) -> list[inspect.FrameInfo]:
    """``inspect.getouterframes(frame)``, every record without source lines."""
    return _records(frame)


_LIGHT = types.SimpleNamespace(**{name: getattr(inspect, name) for name in dir(inspect) if not name.startswith("__")})
_LIGHT.stack = light_stack
_LIGHT.getouterframes = light_outerframes


def install() -> None:
    """Make MyHDL's elaboration use :func:`light_stack` (idempotent)."""
    import importlib

    for name in _CALLERS:
        module = importlib.import_module(name)
        if getattr(module, "inspect", None) is inspect:
            module.inspect = _LIGHT
