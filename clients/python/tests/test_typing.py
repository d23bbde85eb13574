"""The package is typed (py.typed): mypy --strict passes on it and on a user's view of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src" / "backstop"


def test_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is pinned in requirements-test.txt")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(HERE.parent / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            str(SOURCE),
            str(HERE / "typed_usage.py"),
        ],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_py_typed_is_installed() -> None:
    import backstop

    assert (Path(backstop.__file__).parent / "py.typed").exists()
