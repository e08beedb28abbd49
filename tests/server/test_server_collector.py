"""The collector as serve sets it once started (`settle_collector`)."""

from __future__ import annotations

import gc

import pytest

from scorewatch.server.http.serve_process import YOUNG_COLLECTION_THRESHOLD, settle_collector

pytestmark = pytest.mark.unit


def test_serve_freezes_start_up_and_collects_the_young_less_often() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    made_at_start_up: list[object] = []  # tracked by the collector until it is settled
    try:
        settle_collector()
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *before[1:])
        assert before[0] < YOUNG_COLLECTION_THRESHOLD
        assert gc.get_freeze_count() > frozen
        # Frozen: no generation walked by a collection holds it any more.
        assert not any(each is made_at_start_up for each in gc.get_objects())
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
