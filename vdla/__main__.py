"""``python -m vdla``: the ``vdla`` command. Only the standard library is imported before
:func:`vdla.cli.main`, which reports a Ctrl-C from then on (``vdla: interrupted``, status 130)."""

import sys

try:
    from vdla.cli import main
except KeyboardInterrupt:
    print("vdla: interrupted", file=sys.stderr)
    sys.exit(130)
sys.exit(main())
