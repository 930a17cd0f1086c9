"""The vdla command: foundation subcommands and one-line user errors with exit status 2."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "vector_add.s"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_config_show_json_has_vta_keys(capsys):
    code, out, _ = run(capsys, "config", "show", "vta-pynq", "--json")
    data = json.loads(out)
    assert code == 0 and data["params"]["LOG_WGT_BUFF_SIZE"] == 18 and data["fingerprint"].startswith("1x16_")


def test_config_show_text_default_is_osdi18(capsys):
    code, out, _ = run(capsys, "config", "show")
    assert code == 0 and "osdi18" in out and "LOG_BLOCK" in out


def test_asm_exec_disasm(capsys, tmp_path):
    bundle, final = tmp_path / "p.npz", tmp_path / "final.npz"
    assert run(capsys, "asm", EXAMPLE, "-o", bundle)[0] == 0
    code, out, _ = run(capsys, "exec", bundle, "-o", final, "--json")
    report = json.loads(out)
    assert code == 0 and report["counters"]["alu_uops"] == 4
    with np.load(final) as npz:
        assert npz["dram"].dtype == np.uint8
    code, out, _ = run(capsys, "disasm", bundle)
    assert code == 0 and "ALU add uop=0:1 iter=4x1" in out and out.rstrip().splitlines()[-1].startswith("FINISH")


def test_regmap_prints_markdown(capsys):
    code, out, _ = run(capsys, "regmap")
    assert code == 0 and "| 0x00 | CTRL |" in out


def one_line_error(capsys, *argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert err.startswith("vdla: error: ") and err.count("\n") == 1 and words in err, err
    assert "Traceback" not in err


def test_errors_are_one_line_with_status_2(capsys, tmp_path):
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    one_line_error(capsys, "exec", corrupt, words="corrupt")
    bundle = tmp_path / "p.npz"
    run(capsys, "asm", EXAMPLE, "-o", bundle)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(bundle.read_bytes()[:100])
    one_line_error(capsys, "exec", truncated, words="truncated")
    one_line_error(capsys, "exec", bundle, "--config", "osdi18", words="recompile")
    bad = tmp_path / "bad.s"
    cases = {
        "LOAD inp sram=0 x=1\n": "stream ends without FINISH",
        "LOAD inp sram=120 x=20\nFINISH\n": "sram_base",
        "LOAD inp dram=9999 x=2\nFINISH\n": "dram_base",
        "STORE out push_next\nFINISH\n": "push_next",
        "GEMM uop=0:1 pop_prev\nFINISH\n": "pops the empty l2c",
    }
    for text, words in cases.items():
        bad.write_text(".config tiny\n" + text)
        run(capsys, "asm", bad, "-o", bundle)
        one_line_error(capsys, "exec", bundle, words=words)
    bad.write_text(".config tiny\nLOAD inp sram=99999\n")
    one_line_error(capsys, "asm", bad, "-o", bundle, words=f"{bad}:2:")
    one_line_error(capsys, "config", "show", "nope", words="neither a preset")
    one_line_error(capsys, "asm", tmp_path / "missing.s", "-o", bundle, words="no such assembly file")


def test_unknown_opcode_and_memory_type_in_a_bundle(capsys, tmp_path):
    bundle_path = tmp_path / "p.npz"
    run(capsys, "asm", EXAMPLE, "-o", bundle_path)
    with np.load(bundle_path) as npz:
        fields = {k: npz[k] for k in npz.files}
    offset = int(fields["insn_offset"])
    for byte0, words in ((0x07, "unknown opcode 7"), (0x00 | (6 << 7) & 0xFF, "unknown memory type")):
        dram = fields["dram"].copy()
        dram[offset] = byte0
        if "memory" in words:
            dram[offset + 1] = (6 << 7) >> 8
        np.savez(bundle_path, **{**fields, "dram": dram})
        one_line_error(capsys, "exec", bundle_path, words=words)


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "vdla", "config", "show", "tiny", "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["name"] == "tiny"


@pytest.mark.parametrize("argv", [["exec"], ["frobnicate"]])
def test_usage_errors_exit_2(argv):
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2


def test_config_whose_micro_op_does_not_fit_is_a_one_line_error(capsys, tmp_path):
    path = tmp_path / "wide.json"
    path.write_text('{"preset": "vta-pynq", "LOG_ACC_BUFF_SIZE": 18}')
    one_line_error(capsys, "config", "show", path, words="micro-op needs 34 bits")


def test_version_names_the_package_isa_and_protocol(capsys):
    from importlib import metadata

    from driver.protocol import PROTOCOL_VERSION
    from vdla_hw.config import ISA_VERSION

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert out == f"vdla {metadata.version('vdla')} (ISA v{ISA_VERSION}, board protocol v{PROTOCOL_VERSION})\n"


def test_error_messages_escape_control_characters(capsys, tmp_path):
    """A file name (or text from a file or the network) in an error reached the terminal raw."""
    name = str(tmp_path / "evil\x1b]0;owned\x07\x1b[2J.json")
    code, _, err = run(capsys, "config", "show", name)
    assert code == 2 and "\x1b" not in err and "\x07" not in err and err.count("\n") == 1
    assert "evil\\x1b]0;owned\\x07\\x1b[2J.json" in err


@pytest.mark.parametrize("argv, words", [
    (["config", "show", "/dev/zero"], "not a regular file"),
    (["asm", "/dev/zero", "-o", "{tmp}/x.npz"], "the assembly file is not a regular file"),
    (["asm", "{tmp}/bad.s", "-o", "{tmp}/x.npz"], "the assembly file is not UTF-8 text (byte 1)"),
    (["config", "show", "{tmp}/deep.json"], "JSON nested too deeply"),
    (["config", "show", "{tmp}/digits.json"], "not valid JSON (Exceeds the limit (4300 digits)"),
    (["asm", EXAMPLE, "--config", "{tmp}/deep.json", "-o", "{tmp}/x.npz"], "JSON nested too deeply"),
])
def test_reads_from_user_paths_are_capped_and_checked(capsys, tmp_path, argv, words):
    """`vdla config show /dev/zero` read until memory ran out; a config nested 200,000 deep or with a
    5,000-digit integer ended in `internal error`."""
    (tmp_path / "bad.s").write_bytes(b"F\xffINISH\n")
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    (tmp_path / "digits.json").write_text('{"CLOCK_MHZ": ' + "1" * 5000 + "}")
    one_line_error(capsys, *(str(a).format(tmp=tmp_path) for a in argv), words=words)


def test_config_show_escapes_the_name_from_the_file(capsys, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "mine\x1b[2J", "CLOCK_MHZ": 150}))
    code, out, _ = run(capsys, "config", "show", path)
    assert code == 0 and "\x1b" not in out and "configuration mine\\x1b[2J" in out
