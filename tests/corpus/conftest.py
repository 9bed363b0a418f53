"""The 2014 sample is parsed once for all corpus tests."""

from __future__ import annotations

import pytest

from wikisim.corpus import IngestReport, Page, Redirect, read_pages
from wikisim.paths import SAMPLE_DUMP


@pytest.fixture(scope="session")
def sample_read() -> tuple[list[Page | Redirect], IngestReport]:
    stream = read_pages([SAMPLE_DUMP])
    return list(stream), stream.report
