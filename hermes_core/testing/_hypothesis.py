"""hypothesis, imported first by the kit's suites and strategies, with an error that says how to get it."""

from __future__ import annotations

try:
    import hypothesis
except ImportError as exc:  # pragma: no cover - the `testing` extra installs it
    raise ImportError(
        "hermes_core.testing's contract suites and strategies need hypothesis: "
        "pip install 'hermes-core[testing]'"
    ) from exc

__all__ = ["hypothesis"]
