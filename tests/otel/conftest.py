"""The otel group (`python3 dev.py test --otel`, after the whole suite): one Arize Phoenix for the
group, started by its first test; each test exports to its own project in it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.phoenix import PhoenixServer


@pytest.fixture(scope="session")
def phoenix() -> Iterator[PhoenixServer]:
    server = PhoenixServer.create()
    try:
        yield server
    finally:
        server.close()
