"""Issue 45, finding 7: `vdla export-vta` over an earlier export left the earlier files, and
`vdla import-vta` read them with the new ones (exit 0). A flat export's `dram.bin` is what import
reads first, so a case exported over it came back as the earlier image; an object the new
bundle lacks (`weight.bin`) was imported beside the new ones. An export now replaces its folder
as one set (``vdla_hw.vta_format._replace_folder``); a folder holding other files is refused."""

import os

import numpy as np
import pytest

from tests.hw.test_vta_format import write_case
from vdla.cli import main
from vdla_hw.vta_format import CASE_NAMES, import_dir


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    return code, err


@pytest.fixture
def two_bundles(tmp_path, capsys):
    """Two different imported programs (other sizes and data), as bundle files."""
    paths = []
    for k, m in enumerate((3, 5)):
        write_case(tmp_path / f"src{k}", m=m, seed=k + 1)
        paths.append(tmp_path / f"b{k}.npz")
        assert cli(capsys, "import-vta", tmp_path / f"src{k}", "-o", paths[-1])[0] == 0
    return paths


@pytest.mark.parametrize("first_flat, second_flat", [(True, False), (False, True), (False, False), (True, True)])
def test_import_reads_the_last_export_only(tmp_path, capsys, two_bundles, first_flat, second_flat):
    first, second = two_bundles
    out = tmp_path / "out"
    assert cli(capsys, "export-vta", first, out, *(["--flat"] if first_flat else []))[0] == 0
    assert cli(capsys, "export-vta", second, out, *(["--flat"] if second_flat else []))[0] == 0
    fresh = tmp_path / "fresh"
    assert cli(capsys, "export-vta", second, fresh, *(["--flat"] if second_flat else []))[0] == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in fresh.iterdir())
    assert all((out / p.name).read_bytes() == p.read_bytes() for p in fresh.iterdir())
    assert cli(capsys, "import-vta", out, "-o", tmp_path / "back.npz")[0] == 0
    back, want = import_dir(out), import_dir(fresh)
    assert np.array_equal(back.dram, want.dram) and back.insn_offset == want.insn_offset
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_a_stale_object_is_not_imported_with_the_new_ones(tmp_path, capsys, two_bundles):
    """A file of an earlier export that this one does not write (here add_accumulator.bin) is gone."""
    first, _ = two_bundles
    out = tmp_path / "out"
    assert cli(capsys, "export-vta", first, out)[0] == 0
    (out / "add_accumulator.bin").write_bytes(bytes(64))
    assert cli(capsys, "export-vta", first, out)[0] == 0
    assert not (out / "add_accumulator.bin").exists()


def test_a_folder_with_other_files_is_refused_and_left_alone(tmp_path, capsys, two_bundles):
    first, _ = two_bundles
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    (out / "dram.bin").write_bytes(b"old")
    code, err = cli(capsys, "export-vta", first, out)
    assert code == 2 and err.count("\n") == 1 and err.startswith("vdla: error: ")
    assert "holds notes.txt, which a VTA case does not" in err and "new or empty" in err
    assert sorted(p.name for p in out.iterdir()) == ["dram.bin", "notes.txt"]
    assert (out / "dram.bin").read_bytes() == b"old"
    assert "notes.txt" not in CASE_NAMES and "dram.bin" in CASE_NAMES


def test_the_current_folder_is_refused(tmp_path, capsys, two_bundles, monkeypatch):
    first, _ = two_bundles
    out = tmp_path / "out"
    assert cli(capsys, "export-vta", first, out)[0] == 0
    monkeypatch.chdir(out)
    code, err = cli(capsys, "export-vta", first, ".")
    assert code == 2 and "is the current folder" in err and err.count("\n") == 1
    assert os.getcwd() == str(out.resolve()) and (out / "instructions.bin").exists()
