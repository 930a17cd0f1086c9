"""The partition of vdla_hw/rtl/hier.py (fast: elaboration only, no conversion): every block of
tiny's vdla_top in exactly one part, a block in none named in a one-line error, and the CLI's
errors for the option (exit status 2, one line, no traceback)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vdla.cli import main
from vdla_hw.errors import VdlaError


def test_every_block_of_the_core_is_in_one_part():
    from vdla_hw.config import load_config
    from vdla_hw.rtl.convert import _block
    from vdla_hw.rtl.hier import _match, _parts

    core = _block(load_config("tiny"), "vdla_top")
    parts = _match(core.subs)
    assert set(parts) == set(_parts())
    assert sum(len(blks) for blks in parts.values()) == len(core.subs)


def test_a_block_in_no_part_is_named():
    from vdla_hw.rtl.hier import _match

    def debug_tap():
        pass
    with pytest.raises(VdlaError, match="vdla_top's block debug_tap is in no part of vdla_hw.rtl.hier"):
        _match([SimpleNamespace(func=debug_tap, subs=[])])


@pytest.mark.parametrize("args", [["hw", "verilog", "--hierarchical", "--top", "checker"],
                                  ["hw", "synth", "--hierarchical", "--top", "fpga"]])
def test_cli_refuses_a_top_without_a_hierarchical_form(args, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args + ["-o", str(tmp_path)] if args[1] == "verilog" else args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "Traceback" not in err
