"""hermes_core type-checks under `mypy --strict` (configured in pyproject.toml), and stays so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_hermes_core_is_clean_under_mypy_strict() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"mypy --strict (pyproject.toml [tool.mypy]) found problems:\n{result.stdout}{result.stderr}"
    assert "Success: no issues found" in result.stdout
