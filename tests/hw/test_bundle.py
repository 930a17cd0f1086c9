"""Program bundles: builder layout, file round trip, and every kind of damaged file."""

import zipfile

import numpy as np
import pytest

from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.config import load_config
from vdla_hw.errors import BundleError, EncodingError, VdlaError


def small_bundle(preset="tiny"):
    b = BundleBuilder(preset)
    x = b.array("x", "inp", np.arange(8 * b.config.block_in) % 100)
    y = b.alloc("y", "out", 8)
    b.emit("LOAD", memory_type=2, dram_base=x, y_size=1, x_size=8, x_stride=8)
    b.emit("STORE", memory_type=4, dram_base=y, y_size=1, x_size=8, x_stride=8)
    return b.build()


def test_builder_places_symbols_without_overlap_and_aligned():
    b = BundleBuilder("osdi18")
    b.array("a", "inp", np.zeros((3, 1, 16)))
    b.array("w", "wgt", np.zeros((2, 16, 16)))
    b.uops("k", [(0, 0, 0)])
    b.alloc("o", "out", 5)
    bundle = b.build()
    ranges = sorted(s.byte_range(bundle.config) for s in bundle.symbols.values())
    for (lo1, hi1), (lo2, _) in zip(ranges, ranges[1:]):
        assert hi1 <= lo2
    for sym in bundle.symbols.values():
        assert sym.byte_range(bundle.config)[0] % 64 == 0
    assert bundle.insn_offset >= ranges[-1][1] and bundle.insn_offset % 16 == 0
    assert bundle.insns()[-1].kind == "FINISH"


def test_builder_rejects_bad_values_and_duplicates():
    b = BundleBuilder("tiny")
    with pytest.raises(VdlaError, match="outside int8"):
        b.array("a", "inp", [300, 0, 0, 0])
    with pytest.raises(VdlaError, match="not whole inp elements"):
        b.array("a", "inp", [1, 2, 3])
    b.alloc("a", "out", 1)
    with pytest.raises(VdlaError, match="defined twice"):
        b.alloc("a", "out", 1)
    with pytest.raises(EncodingError, match="instruction 0 LOAD: field x_size"):
        b.emit("LOAD", memory_type=2, x_size=1 << 16)


def test_save_load_round_trip(tmp_path):
    bundle = small_bundle()
    path = tmp_path / "p.npz"
    bundle.save(path)
    again = Bundle.load(path)
    assert np.array_equal(again.dram, bundle.dram)
    assert (again.insn_offset, again.insn_count) == (bundle.insn_offset, bundle.insn_count)
    assert again.config == bundle.config and again.symbols == bundle.symbols
    with np.load(path) as npz:
        assert {"dram", "insn_offset", "insn_count", "config"} <= set(npz.files)
        assert npz["dram"].dtype == np.uint8


def test_load_checks_the_expected_configuration(tmp_path):
    path = tmp_path / "p.npz"
    small_bundle("tiny").save(path)
    with pytest.raises(BundleError, match="built for configuration 1x4_.* not 1x16_.*recompile"):
        Bundle.load(path, config="osdi18")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "missing_key", "wrong_dtype",
                                    "insns_past_end", "bad_config", "fingerprint"])
def test_damaged_files_give_one_clear_error(tmp_path, damage):
    path = tmp_path / "p.npz"
    bundle = small_bundle()
    bundle.save(path)
    raw = path.read_bytes()
    fields = {"format": "vdla-bundle", "version": 1, "dram": bundle.dram, "insn_offset": bundle.insn_offset,
              "insn_count": bundle.insn_count, "config": bundle.config.to_json()}
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00garbage" * 40)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        if damage == "missing_key":
            del fields["insn_count"]
        elif damage == "wrong_dtype":
            fields["dram"] = bundle.dram.astype(np.int32)
        elif damage == "insns_past_end":
            fields["insn_count"] = 10_000
        elif damage == "bad_config":
            fields["config"] = '{"preset": "tiny", "LOG_BLOCK": 99}'
        elif damage == "fingerprint":
            fields["fingerprint"] = "1x4_i8w8a32_10_9_9_10-00000000"
        np.savez(path, **fields)
    with pytest.raises(BundleError) as err:
        Bundle.load(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(BundleError, match="no such file"):
        Bundle.load(tmp_path / "none.npz")
    with pytest.raises(BundleError):
        Bundle.load(tmp_path)


def test_read_unknown_symbol():
    with pytest.raises(VdlaError, match="no symbol 'zz'"):
        small_bundle().read("zz")


def test_bundle_is_a_zip_of_npy_files(tmp_path):
    path = tmp_path / "p.npz"
    small_bundle().save(path)
    assert zipfile.is_zipfile(path)


def _fields(path):
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


@pytest.mark.parametrize("key, text, words", [
    ("meta", "[" * 50_000 + "]" * 50_000, "key 'meta': JSON nested too deeply"),
    ("meta", '{"n": ' + "7" * 5000 + "}", "key 'meta': not valid JSON"),
    ("symbols", '{"x": ' * 50_000 + "0" + "}" * 50_000, "key 'symbols': JSON nested too deeply"),
    ("config", '{"LOG_BLOCK": ' + "[" * 50_000 + "]" * 50_000 + "}", "JSON nested too deeply"),
])
def test_hostile_json_keys_are_one_bundle_error(tmp_path, key, text, words):
    """Issue 22: a bundle whose meta is nested 50,000 deep ended in `internal error`."""
    path = tmp_path / "p.npz"
    small_bundle().save(path)
    np.savez(path, **{**_fields(path), key: np.array(text)})
    with pytest.raises(BundleError) as err:
        Bundle.load(path)
    assert words in str(err.value) and str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_save_replaces_the_file_whole(tmp_path, monkeypatch):
    """Bundle.save writes a temporary file and renames it: a failed write leaves the old bundle."""
    import errno
    import os

    path = tmp_path / "p.npz"
    small_bundle().save(path)
    before = path.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left") as err:
        small_bundle("osdi18").save(path)
    assert err.value.filename == str(path)  # the bundle, not the temporary name
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]
