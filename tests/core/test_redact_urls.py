"""Credentials inside URLs are masked by the project's one redaction, whatever form they take."""

from __future__ import annotations

import pytest

from hermes_core import redact_secrets


@pytest.mark.parametrize(("url", "masked"), [
    ("postgresql://hermes:pw@db:5432/x", "postgresql://[REDACTED]@db:5432/x"),
    ("redis://:pw@127.0.0.1:6379/0", "redis://[REDACTED]@127.0.0.1:6379/0"),
    ("https://ghp_tokenOnly123@pypi.fury.io/me/simple/", "https://[REDACTED]@pypi.fury.io/me/simple/"),
])
def test_a_user_password_or_token_in_a_url_is_masked(url: str, masked: str) -> None:
    assert redact_secrets(f"could not reach {url} (refused)") == f"could not reach {masked} (refused)"


def test_an_at_sign_in_a_urls_path_is_left_alone() -> None:
    assert redact_secrets("see https://example.com/a@b") == "see https://example.com/a@b"
