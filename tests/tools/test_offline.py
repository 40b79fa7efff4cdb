"""tools/offline: parts built reproducibly from pinned wheels, installed with every byte checked."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "offline"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"offline_{name}", TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load("build")
install = _load("install")


def _wheel(folder: Path, name: str, files: dict[str, bytes]) -> tuple[str, str]:
    """A wheel with ``files`` and a RECORD; returns (file name, sha256)."""
    filename = f"{name}-1.0-py3-none-any.whl"
    path = folder / filename
    record = [f"{p},," for p in files] + [f"{name}-1.0.dist-info/RECORD,,"]
    with zipfile.ZipFile(path, "w") as archive:
        for inner, data in files.items():
            archive.writestr(inner, data)
        archive.writestr(f"{name}-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return filename, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    cache, locks = tmp_path / "cache", tmp_path / "locks"
    cache.mkdir()
    locks.mkdir()
    noise = os.urandom(3 << 19)  # 1.5 MiB that xz cannot shrink: two chunks of 1 MiB
    a = _wheel(cache, "alpha", {"alpha/__init__.py": b"X = 1\n", "alpha/blob.bin": noise})
    b = _wheel(cache, "beta", {"beta/__init__.py": b"", "beta/docs/big.txt": b"x" * 1000})
    (locks / "demo.lock").write_text(
        "# a demo part\n"
        f"wheel {a[0]} {a[1]}\n"
        f"wheel {b[0]} {b[1]}  # inline note\n"
        "remove beta/docs documentation, never imported\n"
        "env DEMO_FLAG=1\n"
    )
    monkeypatch.setattr(build, "HERE", locks)
    return cache, tmp_path


def test_a_part_is_reproducible_split_and_slimmed(part: tuple[Path, Path]) -> None:
    cache, tmp = part
    first = build.build("demo", cache, tmp / "one", chunk_mib=1, preset=1)
    second = build.build("demo", cache, tmp / "two", chunk_mib=1, preset=1)
    assert first["tarball"] == second["tarball"]  # same lock, same bytes
    chunks = first["chunks"]
    assert len(chunks) == 2 and all(c["bytes"] <= 1 << 20 for c in chunks)
    assert any("remove beta/docs" in line for line in first["report"])
    assert first["env"] == {"DEMO_FLAG": "1"}


def test_install_checks_stages_and_installs_once(
    part: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, tmp = part
    carry = tmp / "carry"
    build.build("demo", cache, carry, chunk_mib=1, preset=1)
    monkeypatch.setattr(install, "STAGE", tmp / "stage")
    monkeypatch.setattr(install, "SITE", tmp / "site")
    # first run: only chunk 1 carried
    second_chunk = carry / "demo" / "c2"
    shutil.move(second_chunk, tmp / "held-back")
    log: list[str] = []
    assert install.install(carry / "demo", log) is None
    assert "carry c2/" in log[-1]
    # second run: chunk 2 arrives (chunk 1 no longer carried)
    shutil.rmtree(carry / "demo" / "c1")
    shutil.move(tmp / "held-back", second_chunk)
    site = install.install(carry / "demo", log)
    assert site is not None
    assert (site / "alpha" / "__init__.py").read_text() == "X = 1\n"
    assert not (site / "beta" / "docs").exists()
    record = (site / "beta-1.0.dist-info" / "RECORD").read_text()
    assert "beta/docs/big.txt" not in record
    assert install.install(carry / "demo", log) == site and "installed" in log[-1]


def test_a_damaged_chunk_is_refused(
    part: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, tmp = part
    carry = tmp / "carry"
    manifest = build.build("demo", cache, carry, chunk_mib=1, preset=1)
    monkeypatch.setattr(install, "STAGE", tmp / "stage")
    monkeypatch.setattr(install, "SITE", tmp / "site")
    chunk = carry / "demo" / manifest["chunks"][0]["path"]
    data = bytearray(chunk.read_bytes())
    data[100] ^= 0xFF
    chunk.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match="damaged"):
        install.install(carry / "demo", [])


def test_the_shipped_locks_read() -> None:
    for lock_file in TOOLS.glob("*.lock"):
        lock = build.Lock.read(lock_file)
        assert lock.wheels, lock_file
        assert all(len(sha) == 64 for _, sha in lock.wheels), lock_file
    assert (
        json.dumps(build.Lock.read(TOOLS / "vllm.lock").env)
        == '{"VLLM_USE_FLASHINFER_SAMPLER": "0"}'
    )


def test_each_engine_gets_its_own_part_on_the_path(
    part: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SGLang's and vLLM's parts bring the same packages at other versions: with both unpacked,
    ``--env`` warns, and naming the parts puts one engine's alone on the path."""
    cache, tmp = part
    locks = tmp / "locks"
    for engine in ("sglang", "vllm"):
        (locks / f"{engine}.lock").write_text((locks / "demo.lock").read_text())
    carry = tmp / "carry"
    for name in ("sglang", "vllm"):
        build.build(name, cache, carry, chunk_mib=8, preset=1)
    monkeypatch.setattr(install, "STAGE", tmp / "stage")
    monkeypatch.setattr(install, "SITE", tmp / "site")
    monkeypatch.setenv("PYTHONPATH", "")

    assert install.main(["--env", "--carry", str(carry)]) == 0
    both = capsys.readouterr()
    assert "sglang and vllm on one path" in both.err
    assert str(tmp / "site" / "sglang") in both.out and str(tmp / "site" / "vllm") in both.out

    assert install.main(["--env", "--carry", str(carry), "node", "vllm"]) == 0
    one = capsys.readouterr()
    assert "on one path" not in one.err
    path = next(line for line in one.out.splitlines() if line.startswith("export PYTHONPATH="))
    assert path == f"export PYTHONPATH={tmp / 'site' / 'vllm'}"
