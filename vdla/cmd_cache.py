"""`vdla cache info` and `vdla cache clear`: the disk cache of vdla_hw.cache (built models,
quantized graphs, schedules, compiled layers, CPU-kernel analyses); registered by vdla.cli
through add_parser."""

from __future__ import annotations

import sys

from vdla import commands


def _size(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def cmd_cache_info(args) -> int:
    from vdla_hw import cache
    from vdla_hw.files import json_text, printable

    info = cache.info()
    if args.kind is not None:  # only that kind's row; the totals become that kind's
        row = info["kinds"].get(args.kind, {"entries": 0, "bytes": 0})
        info.update(kinds={args.kind: row}, entries=row["entries"], bytes=row["bytes"])
    if args.json:
        print(json_text(info, indent=2))
        return 0
    state = info["state"] if info["enabled"] else f"{info['state']}, off ({cache.SWITCH_ENV})"
    print(f"cache folder {printable(info['folder'])} ({state}), bound {_size(info['max_bytes'])} "
          f"({cache.MAX_ENV})")
    for kind, row in sorted(info["kinds"].items()):
        print(f"  {kind:<12} {row['entries']:>7} entries {_size(row['bytes']):>10}")
    print(f"  {'total':<12} {info['entries']:>7} entries {_size(info['bytes']):>10}")
    return 0


def cmd_cache_clear(args) -> int:
    from vdla_hw import cache

    count, size = cache.clear(args.kind)
    what = f" of kind {args.kind}" if args.kind else ""
    print(f"removed {count} entries{what} ({_size(size)}) from {cache.location()}", file=sys.stderr)
    return 0


def _kind(text: str) -> str:
    """``--kind``: one of vdla_hw.cache.KINDS (a typo is refused, not a silent no-op)."""
    import argparse

    from vdla_hw import cache

    try:
        return cache.check_kind(text)
    except cache.CacheError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_parser(sub) -> None:
    from vdla_hw.cache import KINDS

    kinds = f"only this kind ({', '.join(KINDS)})"
    group = commands.add(sub, "cache")
    cache_sub = group.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    info = cache_sub.add_parser("info", help="the cache folder, its size bound, entries and bytes per kind")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.add_argument("--kind", type=_kind, default=None, help=kinds)
    info.set_defaults(func=cmd_cache_info)
    clear = cache_sub.add_parser("clear", help="delete the cache's entries (all, or of one kind)")
    clear.add_argument("--kind", type=_kind, default=None, help=kinds)
    clear.set_defaults(func=cmd_cache_clear)
