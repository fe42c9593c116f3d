"""NVRTC compilation without a GPU, and the persistent cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from baracuda._check import FAMILIES
from baracuda._cuda import compiler
from baracuda._cuda.compiler import KernelSource, compile_cubin, kernel_name, registered_sources
from baracuda.types import ElementKind


def _all_sources() -> list[KernelSource]:
    from baracuda._registry import import_families

    import_families()
    return list(registered_sources())


def test_every_family_registers_sources() -> None:
    names = {s.family for s in _all_sources()}
    assert "elementwise" in names
    assert names <= set(FAMILIES)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_kernel_compiles(arch: str) -> None:
    for src in _all_sources():
        for el in src.elements:
            cubin = compile_cubin(src, el, arch)
            assert cubin[:4] == b"\x7fELF"
            for op in src.entries:  # every entry point is in the image
                assert kernel_name(op, el).encode() in cubin, (src.name, op, el)


def test_compile_error_carries_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from baracuda.errors import CompileError

    bad = KernelSource("elementwise", "lerp.cu", ("nope",))
    monkeypatch.setattr(compiler, "_source_text", lambda fam, fn: "this is not C++;\n")
    with pytest.raises(CompileError) as info:
        compile_cubin(bad, ElementKind.F32, "sm_90")
    assert "error" in info.value.log.lower()
    assert "this is not C++" in info.value.dump()


def test_syntax_check_runs_the_front_end_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check_syntax`` (``compile --syntax-only``, CI's NVRTC 13.0 pass) accepts every real
    program without writing the cache, and rejects what the front end rejects: a syntax error,
    and a template that fails only where an entry instantiates it."""
    from baracuda.errors import CompileError

    monkeypatch.setenv("BARACUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_program_cache", None)
    src = next(s for s in _all_sources() if s.name == "elementwise/lerp.cu")
    compiler.check_syntax(src, ElementKind.BF16, "sm_80")
    assert _cache_files(tmp_path) == []
    text = compiler._source_text(src.family, src.filename)
    for extra in ("int broken = ;\n",
                  "template <class T> __device__ void f(T t) { t.none(); }\n"
                  'extern "C" __global__ void g() { f(1); }\n'):  # fmt: skip
        monkeypatch.setattr(compiler, "_source_text", lambda fam, fn, t=text + extra: t)
        with pytest.raises(CompileError) as info:
            compiler.check_syntax(src, ElementKind.F32, "sm_90")
        assert "error" in info.value.log.lower()


def _cache_files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


def test_cache_hit_after_miss_and_corrupt_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BARACUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_program_cache", None)
    src = _all_sources()[0]
    calls: list[int] = []
    real = compiler._nvrtc_compile

    def counting(*a: object) -> bytes:
        calls.append(1)
        return real(*a)  # type: ignore[arg-type]

    monkeypatch.setattr(compiler, "_nvrtc_compile", counting)
    first = compile_cubin(src, ElementKind.F32, "sm_90")
    assert len(calls) == 1
    files = _cache_files(tmp_path)
    assert files, "the miss wrote an entry"
    second = compile_cubin(src, ElementKind.F32, "sm_90")
    assert second == first and len(calls) == 1, "the hit did not compile"
    # corrupt every entry: the next call must compile again and heal the cache
    for f in _cache_files(tmp_path):
        f.write_bytes(b"garbage")
    third = compile_cubin(src, ElementKind.F32, "sm_90")
    assert third == first and len(calls) == 2
    assert compile_cubin(src, ElementKind.F32, "sm_90") == first and len(calls) == 2
    monkeypatch.setattr(compiler, "_program_cache", None)


def test_cache_key_depends_on_arch_and_element(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BARACUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_program_cache", None)
    src = _all_sources()[0]
    a = compile_cubin(src, ElementKind.F32, "sm_80")
    b = compile_cubin(src, ElementKind.F32, "sm_90")
    c = compile_cubin(src, ElementKind.F64, "sm_90")
    assert len({a, b, c}) == 3
    assert len(_cache_files(tmp_path)) >= 3
    monkeypatch.setattr(compiler, "_program_cache", None)


def test_two_processes_compile_at_once(tmp_path: Path) -> None:
    code = (
        "from baracuda._cuda.compiler import compile_cubin\n"
        "from baracuda.elementwise.lerp import LERP_SOURCE\n"
        "from baracuda.types import ElementKind\n"
        "import hashlib\n"
        "print(hashlib.sha256(compile_cubin(LERP_SOURCE, ElementKind.BF16, 'sm_90')).hexdigest())"
    )
    env = {**os.environ, "BARACUDA_CACHE_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]  # fmt: skip
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0] == outs[1] and len(outs[0]) == 64
    # a third process hits the cache the two left behind
    third = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, check=True)  # fmt: skip
    assert third.stdout.strip() == outs[0]
    assert not list(tmp_path.rglob("*.tmp")), "no temporary files left behind"


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BARACUDA_CACHE_DIR", "/x/y")
    assert str(compiler.cache_dir()) == "/x/y"
    monkeypatch.delenv("BARACUDA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert str(compiler.cache_dir()) == "/xdg/baracuda"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compiler.cache_dir() == Path.home() / ".cache" / "baracuda"


def test_cli_compile_and_info() -> None:
    """The CLI compiles every kernel into the configured cache (the one test_every_kernel_
    compiles fills: a fresh one here cost CI every kernel's NVRTC time a second time) and
    ``info`` reports it."""
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "baracuda", "compile", "--arch", "sm_90"],
                         capture_output=True, text=True, env=env, check=True)  # fmt: skip
    assert "compiled" in out.stdout and "elementwise/lerp.cu" in out.stdout
    info = subprocess.run([sys.executable, "-m", "baracuda", "info"], capture_output=True,
                          text=True, env=env, check=True)  # fmt: skip
    assert "kernel cache" in info.stdout and "NVRTC" in info.stdout


def test_errors_pickle_with_their_fields() -> None:
    """Errors cross process pools (``compile -j N``): message and keyword fields survive."""
    import pickle

    from baracuda.errors import BufferTooSmall, CompileError, CudaError, Unsupported

    e = pickle.loads(pickle.dumps(CompileError("NVRTC failed", log="line 3: error", source="x")))
    assert isinstance(e, CompileError) and e.log == "line 3: error" and e.source == "x"
    assert str(e) == "NVRTC failed\n--- NVRTC log ---\nline 3: error"
    c = pickle.loads(pickle.dumps(CudaError("cuLaunchKernel", name="CUDA_ERROR_INVALID_VALUE")))
    assert c.name == "CUDA_ERROR_INVALID_VALUE"
    assert str(c) == "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE"
    b = pickle.loads(pickle.dumps(BufferTooSmall("x: 4 bytes", needed=8, got=4)))
    assert (b.needed, b.got, str(b)) == (8, 4, "x: 4 bytes")
    assert str(pickle.loads(pickle.dumps(Unsupported("rank 9")))) == "rank 9"
