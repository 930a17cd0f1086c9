"""Helpers for the reproduction studies' tests: read what a study wrote."""

import csv

import pytest


@pytest.fixture
def read_rows():
    def read(path):
        with open(path, newline="") as fh:
            return list(csv.DictReader(fh))
    return read
