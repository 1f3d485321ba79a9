"""
Run the lit + FileCheck suite (tests/filecheck) as part of `pytest`.

lit runs the tests in parallel itself; this test fails with lit's report of the
failing tests when any of them fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FILECHECK_DIR = Path(__file__).parent / "filecheck"

_LIT = "import sys, lit.main; sys.argv[0] = 'lit'; lit.main.main()"


def _run_lit(exec_root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            _LIT,
            "--verbose",
            "--param",
            f"exec_root={exec_root}",
            str(FILECHECK_DIR),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def _discovered(report: str) -> int:
    match = re.search(r"Total Discovered Tests: (\d+)", report)
    return int(match.group(1)) if match else 0


def test_lit_filecheck_suite(tmp_path: Path) -> None:
    """Every RUN/CHECK test under tests/filecheck passes."""
    result = _run_lit(tmp_path)
    report = result.stdout + result.stderr
    assert result.returncode == 0, f"lit failed:\n{report}"
    assert _discovered(report) > 0, f"lit found no tests:\n{report}"
