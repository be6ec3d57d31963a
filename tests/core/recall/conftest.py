"""An archive in a temporary workdir with its recall index, closed when the test ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.archive import Archive
from core.recall import RecallIndex


@pytest.fixture
def archive(tmp_path: Path) -> Archive:
    return Archive(tmp_path)


@pytest.fixture
def index(archive: Archive) -> Iterator[RecallIndex]:
    made = RecallIndex(archive)
    yield made
    made.close()
