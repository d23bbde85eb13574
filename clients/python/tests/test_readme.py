"""The repository README's Python example runs as written, against a real service."""

from __future__ import annotations

import contextlib
import io
import re

from conftest import REPO
from helpers import Server


def _readme_python_block() -> str:
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Python", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "README.md's `### Python` section has a ```python block"
    return found.group(1)


def test_the_readme_example_retries_a_timeout_once(server: Server) -> None:
    code = _readme_python_block()
    assert "http://127.0.0.1:7600" in code
    code = code.replace("http://127.0.0.1:7600", server.url)
    printed = io.StringIO()
    namespace = {"__name__": "readme"}
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "README.md", "exec"), namespace)
    finally:
        namespace["bs"].close()  # type: ignore[attr-defined]
    assert printed.getvalue() == (
        "['a result for vendor data processing agreement'] after 2 calls\n"
    ), printed.getvalue()
