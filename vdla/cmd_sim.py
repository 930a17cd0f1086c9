"""Subcommands of `vdla sim` (vdla_sim); registered by vdla.cli through add_parser."""

from __future__ import annotations


def add_parser(sub) -> None:
    """Add this module's subcommands to the ``vdla`` argument parser."""
