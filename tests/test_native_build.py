"""scripts/llama-cmake-native.sh: the flags `make install` and `make llama-server` compile
llama.cpp with on this machine. AMX is in only where its probe ran a tile product right, out
on request, and never asked for on a processor without it."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "llama-cmake-native.sh"
NO_AMX = "-mno-amx-int8"


def _flags(**env: str) -> str:
    result = subprocess.run(
        ["sh", str(SCRIPT)], capture_output=True, text=True, timeout=120, env=dict(os.environ, **env)
    )
    assert result.returncode == 0 and not result.stderr, result.stderr
    shlex.split(result.stdout)  # CMAKE_ARGS is split like a shell line (scikit-build-core, Makefile)
    return result.stdout.strip()


pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 flags")


def test_native_and_amx_left_out_on_request():
    flags = _flags(HOMEAI_AMX="off")
    assert flags.startswith("-DGGML_NATIVE=ON") and NO_AMX in flags


def test_amx_is_in_only_where_the_processor_has_it():
    flags = _flags()
    assert flags.startswith("-DGGML_NATIVE=ON")
    has_amx = " amx_int8 " in f" {Path('/proc/cpuinfo').read_text().replace(chr(10), ' ')} "
    if not has_amx:
        assert NO_AMX in flags
    elif NO_AMX not in flags:
        # The probe passed; on GCC 12 only with dead-store elimination off.
        version = subprocess.run(["c++", "-dumpversion"], capture_output=True, text=True).stdout.strip()
        if version.split(".")[0] == "12":
            assert "-fno-dse" in flags
