"""``import baracuda`` imports no framework and needs no driver."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_pulls_no_framework() -> None:
    code = (
        "import sys, baracuda\n"
        "bad = [m for m in ('torch', 'cupy', 'jax', 'jaxlib', 'cuda.bindings.driver',"
        " 'cuda.core') if m in sys.modules]\n"
        "print(bad)"
    )
    assert _run(code) == "[]"


def test_import_without_driver() -> None:
    # an empty library path hides any libcuda.so; the import and the CPU path still work
    code = (
        "import os, numpy as np, baracuda as bc\n"
        "x = np.ones(4, np.float32)\n"
        "print(float(bc.lerp(x, 3 * x, 0.5)[0]))"
    )
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**env, "PYTHONPATH": ":".join(sys.path)})  # fmt: skip
    assert out.stdout.strip() == "2.0"


def test_public_namespace() -> None:
    import baracuda as bc

    assert set(bc.__all__) <= set(dir(bc)) | {"__version__"}
    for name in bc.__all__:
        assert getattr(bc, name) is not None
