"""Shared fixtures: the source tree, the `flashsim` executable the module is compared with."""

import os
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("FLASHSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def source_dir() -> Path:
    return SOURCE_DIR


@pytest.fixture(scope="session")
def flashsim_exe():
    """Runs the `flashsim` executable (FLASHSIM_EXE, which CTest sets): returns (exit code, stdout, stderr)."""
    exe = os.environ.get("FLASHSIM_EXE")
    if not exe or not Path(exe).is_file():
        pytest.skip("FLASHSIM_EXE is not set to the flashsim executable (CTest sets it)")

    def run(*args, cwd=None):
        p = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, cwd=cwd)
        return p.returncode, p.stdout, p.stderr

    return run
