"""The command line every figure generator shares: ``python scripts/figures/DOC.py BLOCK [ARGS]``
prints the block that the doc's ``<!-- generated: ... -->`` marker names (tests/test_doc_figures.py
runs it and compares); an unknown block is a usage line and exit status 2."""

from __future__ import annotations

import sys
from pathlib import Path


def main(blocks: dict, argv: list[str] | None = None) -> int:
    """Print ``blocks[argv[0]](*argv[1:])``; ``blocks`` maps a block's name to its function."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in blocks:
        print(f"usage: python scripts/figures/{Path(sys.argv[0]).name} {'|'.join(blocks)} [ARGS]", file=sys.stderr)
        return 2
    print(blocks[argv[0]](*argv[1:]))
    return 0
