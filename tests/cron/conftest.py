"""The fixture of the cron tests: a home with the scripted model, in UTC."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import llm_config


@pytest.fixture
def configured(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Path:
    llm_config(home, llm_server.url, "timezone: UTC\n")
    monkeypatch.setenv("HERMES_TIMEZONE", "UTC")
    return home
