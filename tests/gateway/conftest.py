"""The fake chat service every gateway test talks through."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.chat import FakeChat


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeChat]:
    service = FakeChat()
    monkeypatch.setenv("FAKECHAT_URL", service.url)  # enables the platform (its env_enablement_fn)
    for name in ("FAKECHAT_ALLOWED_USERS", "FAKECHAT_ALLOW_ALL_USERS", "GATEWAY_ALLOWED_USERS",
                 "GATEWAY_ALLOW_ALL_USERS", "WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    yield service
    service.close()
