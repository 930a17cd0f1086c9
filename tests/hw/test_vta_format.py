"""vdla_hw/vta_format.py and `vdla import-vta` / `vdla export-vta`: VTA's standalone case format.

The cases here are synthetic: written by these tests in VTA's layout (physical addresses from
0x1000, dram_base in VTA's element units), never VTA's own files.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from tests.hw.programs import fixed_corpus
from vdla.cli import main
from vdla_hw import isa
from vdla_hw.bundle import Bundle
from vdla_hw.config import load_config
from vdla_hw.semantics import execute
from vdla_hw.vta_format import VTA_BASE, VtaFormatError, export_dir, import_dir
from vdla_sim.progen import random_program

UOP, WGT, INP, ACC, OUT = 0, 1, 2, 3, 4


def write_case(folder, config="vta-pynq", *, m=3, seed=0, csv=None, chisel_csv=False):
    """A synthetic case: out = low8(inp @ wgt.T) for ``m`` input vectors, in VTA's layout:
    input at 0x1000, weight 0x2000, out 0x3000, uop 0x4000, instructions 0x5000."""
    c = load_config(config)
    rng = np.random.default_rng(seed)
    inp = rng.integers(-128, 128, size=(m, c.batch, c.block_in), dtype=np.int8)
    wgt = rng.integers(-128, 128, size=(1, c.block_out, c.block_in), dtype=np.int8)
    at = {"input": 0x1000, "weight": 0x2000, "out": 0x3000, "uop": 0x4000, "instructions": 0x5000}
    eb = c.elem_bytes
    uops = isa.encode_uops([(i, i, 0) for i in range(m)], c)
    insns = [
        isa.Insn("LOAD", memory_type=UOP, dram_base=at["uop"] // eb("uop"), y_size=1, x_size=m, x_stride=m),
        isa.Insn("LOAD", memory_type=INP, dram_base=at["input"] // eb("inp"), y_size=1, x_size=m, x_stride=m),
        isa.Insn("LOAD", memory_type=WGT, dram_base=at["weight"] // eb("wgt"), y_size=1, x_size=1, x_stride=1,
                 push_next=1),
        isa.Insn("GEMM", pop_prev=1, reset=1, uop_end=m, iter_out=1, iter_in=1),
        isa.Insn("GEMM", uop_end=m, iter_out=1, iter_in=1, push_next=1),
        isa.Insn("STORE", memory_type=OUT, pop_prev=1, push_prev=1, dram_base=at["out"] // eb("out"),
                 y_size=1, x_size=m, x_stride=m),
        isa.Insn("FINISH", pop_next=1),
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "input.bin").write_bytes(inp.tobytes())
    (folder / "weight.bin").write_bytes(wgt.tobytes())
    (folder / "out.bin").write_bytes(bytes(m * eb("out")))
    (folder / "uop.bin").write_bytes(uops.astype("<u4").tobytes())
    (folder / "instructions.bin").write_bytes(isa.encode_program(insns, c))
    expected = (inp.astype(np.int64) @ wgt[0].T.astype(np.int64)).astype(np.int8)
    (folder / "expected_out.bin").write_bytes(expected.tobytes())
    if csv is None:
        if chisel_csv:  # the cycle-accurate cases' dialect: 0 = "not in DRAM", placed in VTA's order
            csv = "inp,0x0000\nwgt,0x0000\nout,0x0000\nuop,0x4000\n"
        else:
            csv = "".join(f"{key},{hex(at[stem])},{hex(at[stem] // size)}\n" for key, stem, size in
                          (("INP", "input", eb("inp")), ("WGT", "weight", eb("wgt")), ("OUT", "out", eb("out")),
                           ("UOP", "uop", 4), ("INSN", "instructions", 16)))
    (folder / "memory_addresses.csv").write_text(csv)
    return expected


def out_bytes(bundle: Bundle, dram: np.ndarray) -> bytes:
    lo, hi = bundle.symbols["out"].byte_range(bundle.config)
    return dram[lo:hi].tobytes()


@pytest.mark.parametrize("chisel_csv", [False, True])
def test_synthetic_case_gives_the_numpy_result_on_exec(tmp_path, chisel_csv):
    expected = write_case(tmp_path / "case", chisel_csv=chisel_csv)
    bundle = import_dir(tmp_path / "case")
    assert bundle.config.name == "vta-pynq"
    assert bundle.symbols["input"].index == 0 and bundle.symbols["out"].index * 16 == 0x2000
    # dram_base lowered by 0x1000 / element bytes: the uop LOAD reads our byte 0x3000
    assert bundle.insns()[0].dram_base * 4 == 0x4000 - VTA_BASE
    assert out_bytes(bundle, execute(bundle).dram) == expected.tobytes()
    assert base64.b64decode(bundle.meta["vta_files"]["expected_out.bin"]) == expected.tobytes()


def test_case_round_trip_import_export_import_is_byte_identical(tmp_path):
    write_case(tmp_path / "case", m=5, seed=3, chisel_csv=True)
    first = import_dir(tmp_path / "case")
    export_dir(first, tmp_path / "again")
    assert (tmp_path / "again" / "input.bin").read_bytes() == (tmp_path / "case" / "input.bin").read_bytes()
    assert (tmp_path / "again" / "instructions.bin").read_bytes() == (tmp_path / "case" / "instructions.bin").read_bytes()
    assert import_dir(tmp_path / "again").to_bytes() == first.to_bytes()
    export_dir(first, tmp_path / "flat", flat=True)
    flat = import_dir(tmp_path / "flat")
    assert np.array_equal(flat.dram, first.dram) and flat.insn_offset == first.insn_offset
    assert (tmp_path / "flat" / "instructions.bin").read_bytes() == (tmp_path / "case" / "instructions.bin").read_bytes()


@pytest.mark.parametrize("name, bundle", fixed_corpus("tiny")[:6] + [("progen3", random_program(3, "tiny"))])
def test_our_programs_round_trip_through_both_formats(tmp_path, name, bundle):
    formats = (False, True)
    if name.startswith("progen"):  # its micro-op tables and outputs alternate in the image
        with pytest.raises(VtaFormatError, match="export it with --flat"):
            export_dir(bundle, tmp_path / "case")
        formats = (True,)
    for flat in formats:
        folder = tmp_path / ("flat" if flat else "case")
        export_dir(bundle, folder, flat=flat)
        back = import_dir(folder, config="tiny")
        assert np.array_equal(back.dram, bundle.dram) and back.insn_offset == bundle.insn_offset, (name, flat)
        assert import_dir(folder, config="tiny").to_bytes() == back.to_bytes()
        export_dir(back, tmp_path / "again", flat=flat)
        for path in folder.iterdir():
            assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes(), (name, path.name)


def test_export_raises_dram_base_by_the_first_page(tmp_path):
    name, bundle = fixed_corpus("tiny")[1]
    export_dir(bundle, tmp_path / "flat", flat=True)
    theirs = isa.decode_program((tmp_path / "flat" / "instructions.bin").read_bytes(), bundle.config)
    for ours, vta in zip(bundle.insns(), theirs):
        if ours.kind in ("LOAD", "STORE") and ours.x_size:
            assert vta.dram_base == ours.dram_base + VTA_BASE // bundle.config.elem_bytes(ours.mem)
        else:
            assert vta == ours


def test_export_re_encodes_for_a_deeper_vta_configuration(tmp_path):
    name, bundle = fixed_corpus("osdi18")[1]  # matmul: GEMM with wgt factors (7 bits on osdi18, 10 on VTA's)
    export_dir(bundle, tmp_path / "vta", flat=True, vta_config="vta-pynq")
    moved = import_dir(tmp_path / "vta", config="vta-pynq")
    assert [i.replace(dram_base=0) for i in moved.insns()] == [i.replace(dram_base=0) for i in bundle.insns()]
    assert moved.insn_bytes != bundle.insn_bytes  # other bit positions
    mask = np.ones(bundle.dram.size, dtype=bool)
    mask[bundle.insn_offset:bundle.insn_offset + 16 * bundle.insn_count] = False
    assert np.array_equal(execute(moved).dram[mask], execute(bundle).dram[mask])


def test_export_refuses_another_element_shape(tmp_path):
    with pytest.raises(VtaFormatError, match="LOG_BLOCK"):
        export_dir(fixed_corpus("tiny")[0][1], tmp_path / "x", vta_config="vta-pynq")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    return code, err


def test_cli_import_exec_export(tmp_path, capsys):
    expected = write_case(tmp_path / "case")
    code, err = run(capsys, "import-vta", tmp_path / "case", "-o", tmp_path / "b.npz")
    assert code == 0 and "7 instructions" in err
    assert run(capsys, "exec", tmp_path / "b.npz", "-o", tmp_path / "final.npz")[0] == 0
    final = Bundle.load(tmp_path / "final.npz")
    assert out_bytes(final, final.dram) == expected.tobytes()
    assert run(capsys, "export-vta", tmp_path / "b.npz", tmp_path / "out")[0] == 0
    assert (tmp_path / "out" / "expected_out.bin").read_bytes() == expected.tobytes()


def _break(folder, how):
    if how == "missing":
        (folder / "instructions.bin").unlink()
    elif how == "size":
        (folder / "input.bin").write_bytes(b"\x01" * 17)
    elif how == "truncated":
        data = (folder / "instructions.bin").read_bytes()
        (folder / "instructions.bin").write_bytes(data[:-5])
    elif how == "hex":
        (folder / "memory_addresses.csv").write_text("INP,0xZZ\n")
    elif how == "unknown":
        (folder / "memory_addresses.csv").write_text("FOO,0x1000\n")
    elif how == "twice":
        (folder / "memory_addresses.csv").write_text("INP,0x1000\ninp,0x2000\n")
    elif how == "page0":
        (folder / "memory_addresses.csv").write_text("inp,0x0000\nwgt,0x0000\nout,0x0000\nuop,0x0800\n")
    elif how == "overlap":
        (folder / "memory_addresses.csv").write_text("INP,0x1000\nWGT,0x1000\nOUT,0x3000\nUOP,0x4000\n")
    elif how == "no_csv":
        (folder / "memory_addresses.csv").unlink()
    elif how == "opcode":
        data = bytearray((folder / "instructions.bin").read_bytes())
        data[16] = (data[16] & ~7) | 7
        (folder / "instructions.bin").write_bytes(bytes(data))


@pytest.mark.parametrize("how, words", [
    ("missing", "missing instruction stream"), ("size", "not a whole number of 16-byte inp elements"),
    ("truncated", "not a whole number of 16-byte instructions"), ("hex", "not a hexadecimal address"),
    ("unknown", "unknown object 'FOO'"), ("twice", "given twice"), ("page0", "unmapped first page"),
    ("overlap", "overlap"), ("no_csv", "missing memory_addresses.csv"), ("opcode", "unknown opcode 7"),
])
def test_bad_cases_are_one_line_errors(tmp_path, capsys, how, words):
    write_case(tmp_path / "case")
    _break(tmp_path / "case", how)
    code, err = run(capsys, "import-vta", tmp_path / "case", "-o", tmp_path / "b.npz")
    assert code == 2 and err.count("\n") == 1 and err.startswith("vdla: error: ") and words in err, err
    assert not (tmp_path / "b.npz").exists()


def test_a_case_that_does_not_fit_the_configuration_is_refused(tmp_path, capsys):
    write_case(tmp_path / "case", m=3)
    code, err = run(capsys, "import-vta", tmp_path / "case", "-o", tmp_path / "b.npz", "--config", "osdi18")
    assert code == 0  # same element shapes; every index fits osdi18's SRAMs
    code, err = run(capsys, "import-vta", tmp_path / "case", "-o", tmp_path / "b.npz", "--config", "tiny")
    assert code == 2 and err.count("\n") == 1 and "tiny" in err, err


def test_a_dram_base_in_the_unmapped_page_is_refused(tmp_path, capsys):
    write_case(tmp_path / "case")
    c = load_config("vta-pynq")
    data = bytearray((tmp_path / "case" / "instructions.bin").read_bytes())
    insn = isa.decode(bytes(data[16:32]), c).replace(dram_base=3)
    data[16:32] = isa.encode(insn, c)
    (tmp_path / "case" / "instructions.bin").write_bytes(bytes(data))
    code, err = run(capsys, "import-vta", tmp_path / "case", "-o", tmp_path / "b.npz")
    assert code == 2 and "instruction 1 (LOAD inp) dram_base 3 is VTA physical address 0x30" in err, err


@pytest.mark.parametrize("how, words", [
    ("no_insn_row", "no INSN row"), ("moved", "differs from the stream at INSN"),
    ("outside", "is not a 16-byte boundary inside dram.bin"), ("base", "DRAM must start at 0x1000"),
])
def test_bad_flat_directories_are_one_line_errors(tmp_path, capsys, how, words):
    bundle = fixed_corpus("tiny")[1][1]
    folder = tmp_path / "flat"
    export_dir(bundle, folder, flat=True)
    csv = (folder / "memory_addresses.csv").read_text().splitlines()
    if how == "no_insn_row":
        csv = csv[:1]
    elif how == "moved":
        csv[1] = f"INSN,{hex(VTA_BASE + bundle.insn_offset - 16)},0"
    elif how == "outside":
        csv[1] = f"INSN,{hex(VTA_BASE + bundle.dram.size)},0"
    elif how == "base":
        csv[0] = "DRAM,0x2000,0x2000"
    (folder / "memory_addresses.csv").write_text("\n".join(csv) + "\n")
    code, err = run(capsys, "import-vta", folder, "-o", tmp_path / "b.npz", "--config", "tiny")
    assert code == 2 and err.count("\n") == 1 and words in err, err


def test_cli_export_of_interleaved_data_points_to_flat(tmp_path, capsys):
    random_program(3, "tiny").save(tmp_path / "p.npz")
    code, err = run(capsys, "export-vta", tmp_path / "p.npz", tmp_path / "case")
    assert code == 2 and err.count("\n") == 1 and "--flat" in err, err
    assert run(capsys, "export-vta", tmp_path / "p.npz", tmp_path / "flat", "--flat")[0] == 0
    code, err = run(capsys, "export-vta", tmp_path / "p.npz", tmp_path / "x", "--vta-config", "vta-pynq")
    assert code == 2 and err.count("\n") == 1 and "LOG_BLOCK" in err, err


@pytest.mark.parametrize("flat", [False, True])
def test_an_export_of_another_configuration_says_how_to_import_it(tmp_path, capsys, flat):
    """Issue 45, a newcomer's three: import-vta of a tiny export failed without --config, naming
    vta-pynq's element sizes but not that it had assumed vta-pynq; export-vta did not say either."""
    bundle = random_program(3, "tiny") if flat else fixed_corpus("tiny")[0][1]
    bundle.save(tmp_path / "p.npz")
    code, err = run(capsys, "export-vta", tmp_path / "p.npz", tmp_path / "x", *(["--flat"] if flat else []))
    assert code == 0 and err.splitlines()[-1] == \
        f"encoded for configuration tiny: import it with vdla import-vta {tmp_path / 'x'} --config tiny", err
    code, err = run(capsys, "import-vta", tmp_path / "x", "-o", tmp_path / "b.npz")
    assert code == 2 and err.count("\n") == 1 and err.rstrip().endswith(
        "(read as configuration vta-pynq, VTA's default: a case of another configuration needs --config, "
        "the one vdla export-vta named)"), err
    code, err = run(capsys, "import-vta", tmp_path / "x", "-o", tmp_path / "b.npz", "--config", "tiny")
    assert code == 0, err


@pytest.mark.parametrize("name", ["input.bin", "instructions.bin", "memory_addresses.csv"])
def test_a_case_file_linked_out_of_the_folder_is_refused(tmp_path, capsys, name):
    """Issue 45 finding 8: import-vta followed a symbolic link out of the case folder and put
    /etc/passwd's bytes into the bundle (exit 0). A link that stays inside still reads."""
    write_case(tmp_path / "case", m=3, seed=1)
    outside = tmp_path / "secret.bin"
    outside.write_bytes((tmp_path / "case" / name).read_bytes())  # a valid file: only its place is wrong
    (tmp_path / "case" / name).unlink()
    (tmp_path / "case" / name).symlink_to(outside)
    assert main(["import-vta", str(tmp_path / "case"), "-o", str(tmp_path / "b.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and name in err[0] and "outside the folder" in err[0], err
    assert not (tmp_path / "b.npz").exists()
    (tmp_path / "case" / "kept.bin").write_bytes(outside.read_bytes())
    (tmp_path / "case" / name).unlink()
    (tmp_path / "case" / name).symlink_to("kept.bin")
    assert main(["import-vta", str(tmp_path / "case"), "-o", str(tmp_path / "b.npz")]) == 0
