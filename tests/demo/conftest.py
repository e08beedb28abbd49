"""Fixtures of the demo tests."""

from __future__ import annotations

import pytest

from scorewatch.demo.dataset import DemoDataset, load_demo_dataset


@pytest.fixture(scope="module")
def dataset() -> DemoDataset:
    return load_demo_dataset()
