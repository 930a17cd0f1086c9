"""Errors for people: every error names what was wrong and where.

All project errors derive from :class:`VdlaError`; the CLI prints ``str(error)`` on one line
and exits with status 2, so the message must stand on its own.
"""

from __future__ import annotations


class VdlaError(Exception):
    """Base class of every user-facing error of the project.

    ``error_bit``: the name (a key of ``vdla_hw.regmap.ERROR_BITS``) of the ERROR register bit
    the hardware sets for this error: a class states it for all its errors, a raiser passes it
    where it detects the error; None when the hardware has no such check (a configuration, a
    file, the simulator's race or uninitialised-read check)."""

    error_bit: str | None = None


class ConfigError(VdlaError):
    """A configuration parameter is missing, unknown or out of range."""

    def __init__(self, param: str, value: object, why: str, source: str = ""):
        self.param, self.value, self.why, self.source = param, value, why, source
        where = f"{source}: " if source else ""
        name = param if isinstance(param, str) and param.isidentifier() else repr(param)
        super().__init__(f"{where}configuration parameter {name}={value!r}: {why}")


class EncodingError(VdlaError):
    """An instruction or micro-op cannot be encoded or decoded (``error_bit``: see VdlaError)."""

    def __init__(self, what: str, field: str, why: str, index: int | None = None, *,
                 error_bit: str | None = None):
        self.what, self.field, self.why, self.index = what, field, why, index
        if error_bit is not None:
            self.error_bit = error_bit
        at = f"instruction {index} " if index is not None else ""
        super().__init__(f"{at}{what}: field {field}: {why}")


class ProgramError(VdlaError):
    """A program does something the accelerator forbids (bad access, bad flag, token misuse);
    ``error_bit``: see VdlaError."""

    def __init__(self, index: int | None, kind: str, field: str, why: str, *, error_bit: str | None = None):
        self.index, self.kind, self.field, self.why = index, kind, field, why
        if error_bit is not None:
            self.error_bit = error_bit
        at = f"instruction {index} ({kind})" if index is not None else f"program ({kind})"
        super().__init__(f"{at}: {field}: {why}")


class AsmError(VdlaError):
    """A line of assembly text cannot be parsed."""

    def __init__(self, source: str, line: int, why: str):
        self.source, self.line, self.why = source, line, why
        super().__init__(f"{source}:{line}: {why}")


class FileRefused(VdlaError):
    """A user's file the tools will not read: missing, not a regular file (a FIFO, a device, a
    directory, a socket), larger than its documented limit, or outside the folder it must be in
    (vdla_hw.files.open_checked). ``why`` is the reason without the path."""

    def __init__(self, path: str, why: str):
        self.path, self.why = path, why
        super().__init__(f"{path}: {why}")


class BundleError(VdlaError):
    """A program bundle file is missing, corrupt, truncated or inconsistent."""

    def __init__(self, path: str, why: str):
        self.path, self.why = path, why
        super().__init__(f"{path}: {why}")


class LimitError(VdlaError):
    """An input asks for more work or memory than a documented limit (vdla_hw/limits.py) allows."""
