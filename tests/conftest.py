"""Shared pytest setup: hypothesis profiles (CI runs the same examples every time), and a fresh
CPU cost-model cache per session (tests never read analyses an earlier run left behind), and
`cache_folder`, an empty disk cache for one test."""

import os
import shutil
import tempfile

import pytest

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
# a longer fuzzing campaign by hand: pytest tests/fuzz --hypothesis-profile=long
settings.register_profile("long", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")


def pytest_configure(config):
    config._vdla_cache = tempfile.mkdtemp(prefix="vdla-test-cache-")
    os.environ["VDLA_CACHE_DIR"] = config._vdla_cache


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "_vdla_cache", ""), ignore_errors=True)


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    """A fresh, empty disk cache for one test (``VDLA_CACHE_DIR``, not yet created), with the
    cache on, the default size bound and :mod:`vdla_hw.cache`'s per-process counters reset."""
    from vdla_hw import cache

    path = tmp_path / "vdla-cache"
    monkeypatch.setenv("VDLA_CACHE_DIR", str(path))
    monkeypatch.delenv("VDLA_CACHE", raising=False)
    monkeypatch.delenv("VDLA_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(cache, "stats", {})
    monkeypatch.setattr(cache, "_warned", set())
    return path
