"""Build offline installs ("parts") for the GPU machine, which reaches no package registry.

One part is a set of pinned wheels (``tools/offline/<part>.lock``: file name and sha256 of each,
and what is removed from the unpacked tree and why), unpacked as an installer would, stripped,
packed into one reproducible tar.xz and split into chunks small enough to carry (at most
``--chunk-mib`` MiB each, 40 by default; a device run takes 64 MiB in all, the tree's ~11 included).

    python3 tools/offline/build.py node sglang        # here, where PyPI is reachable
    python3 tools/offline/install.py                  # there: checks every byte, unpacks

Writes ``.carry/<part>/``: ``c1/``, ``c2/``... (the chunks) and ``manifest.json`` (sizes and
sha256 of every chunk and of the whole tarball). ``.carry/`` is git-ignored. Downloads are
cached (``--cache``, default ``~/.cache/autotune-offline``) and checked against the lock; the
tarball is deterministic (sorted names, mtime 0, owner 0, normalised modes, ``xz -9e``
single-threaded), so the same lock gives the same bytes.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import lzma
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIB = 1 << 20
# What pip may pick for CPython 3.12 on x86-64 Linux (the GPU machine's interpreter).
PLATFORMS = [
    "manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
    "manylinux_2_26_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
    "manylinux2014_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64", "any",
]  # fmt: skip


@dataclass
class Lock:
    """A part's pinned inputs, read from ``<part>.lock``."""

    part: str
    wheels: list[tuple[str, str]] = field(default_factory=list)  # (file name, sha256)
    remove: list[tuple[str, str]] = field(default_factory=list)  # (path in the tree, why)
    strip_all: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    env: dict[str, str] = field(default_factory=dict)  # set by install.py's --env

    @classmethod
    def read(cls, path: Path) -> Lock:
        lock = cls(part=path.stem)
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.split("#", 1)[0].strip() if raw.lstrip().startswith("#") else raw.strip()
            if not line:
                continue
            kind, _, rest = line.partition(" ")
            words = rest.split()
            if kind == "wheel" and len(words) >= 2:
                lock.wheels.append((words[0], words[1]))
            elif kind in ("remove", "strip-all") and words:
                entry = (words[0], " ".join(words[1:]))
                (lock.remove if kind == "remove" else lock.strip_all).append(entry)
            elif kind == "env" and len(words) == 1 and "=" in words[0]:
                name, _, value = words[0].partition("=")
                lock.env[name] = value
            else:
                sys.exit(
                    f"{path}:{number}: cannot read {raw!r} (wheel FILE SHA256 | remove PATH "
                    "WHY | strip-all PATH WHY | env NAME=VALUE)"
                )
        return lock


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(lock: Lock, cache: Path) -> list[Path]:
    """Every wheel of the lock in ``cache``, downloaded when missing, checked by sha256."""
    cache.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, want in lock.wheels:
        path = cache / name
        if not path.exists() or sha256(path) != want:
            dist, version = name.split("-")[:2]
            print(f"   pip download {dist}=={version}", flush=True)
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "--implementation",
                "cp",
                "--abi",
                "cp312",
                "--abi",
                "abi3",
                "--abi",
                "none",
                "-d",
                str(cache),
            ]
            for platform in PLATFORMS:
                argv += ["--platform", platform]
            subprocess.run([*argv, f"{dist}=={version}"], check=True)
            if not path.exists():
                sys.exit(f"pip did not produce {name} (is the lock's file name exact?)")
            got = sha256(path)
            if got != want:
                sys.exit(f"sha256 mismatch for {name}: lock {want}, PyPI {got}")
        paths.append(path)
    return paths


def unpack(wheels: list[Path], site: Path) -> None:
    """Unpack wheels as an installer would: purelib/platlib at the root, scripts dropped."""
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                name = info.filename
                if name.endswith("/"):
                    continue
                parts = name.split("/")
                if parts[0].endswith(".data"):
                    if len(parts) > 2 and parts[1] in ("purelib", "platlib"):
                        name = "/".join(parts[2:])
                    else:
                        continue  # console scripts, headers, data: never imported
                target = site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
                executable = (info.external_attr >> 16) & 0o111
                target.chmod(0o755 if executable else 0o644)


def slim(lock: Lock, site: Path) -> list[str]:
    """Apply the lock's removals and strips; rewrite RECORD files to match. Returns a report."""
    report: list[str] = []
    removed: set[str] = set()
    changed: set[str] = set()
    for rel, why in lock.remove:
        path = site / rel
        if not path.exists():
            sys.exit(f"{lock.part}.lock: remove {rel}: not in the tree (the lock is stale)")
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        removed.update(str(p.relative_to(site)) for p in files)
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        report.append(f"remove {rel} ({size / MIB:.1f} MiB): {why}")
    for rel, why in lock.strip_all:
        path = site / rel
        before = path.stat().st_size
        subprocess.run(["strip", "--strip-unneeded", str(path)], check=True)
        changed.add(rel)
        report.append(
            f"strip-all {rel} ({before / MIB:.1f} -> {path.stat().st_size / MIB:.1f} MiB): {why}"
        )
    for path in sorted(site.rglob("*.so*")):
        if not path.is_file() or str(path.relative_to(site)) in changed:
            continue
        sections = subprocess.run(
            ["readelf", "-S", "-W", str(path)], capture_output=True, text=True
        ).stdout
        if ".debug_info" in sections:
            before = path.stat().st_size
            subprocess.run(["strip", "--strip-debug", str(path)], check=True)
            rel = str(path.relative_to(site))
            changed.add(rel)
            report.append(
                f"strip-debug {rel} ({before / MIB:.1f} -> {path.stat().st_size / MIB:.1f} MiB)"
            )
    for record in sorted(site.glob("*.dist-info/RECORD")):
        lines = []
        for line in record.read_text().splitlines():
            rel = line.rsplit(",", 2)[0]
            if rel in removed:
                continue
            if rel in changed:
                data = (site / rel).read_bytes()
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                line = f"{rel},sha256={digest.decode()},{len(data)}"
            lines.append(line)
        record.write_text("\n".join(lines) + "\n")
    return report


def pack(site: Path, out: Path, preset: int) -> None:
    """A deterministic tar of ``site``, xz-compressed single-threaded."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in sorted(site.rglob("*"), key=lambda p: str(p.relative_to(site)).split("/")):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(site)))
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            executable = path.is_dir() or path.stat().st_mode & stat.S_IXUSR
            info.mode = 0o755 if executable else 0o644
            if info.isfile():
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    compressor = lzma.LZMACompressor(format=lzma.FORMAT_XZ, preset=preset | lzma.PRESET_EXTREME)
    with open(out, "wb") as fh:
        view = raw.getbuffer()
        for start in range(0, len(view), 1 << 22):
            fh.write(compressor.compress(view[start : start + (1 << 22)]))
        fh.write(compressor.flush())


def build(part: str, cache: Path, carry: Path, chunk_mib: int, preset: int) -> dict[str, object]:
    lock = Lock.read(HERE / f"{part}.lock")
    print(f"== {part}: {len(lock.wheels)} wheel(s)", flush=True)
    wheels = fetch(lock, cache)
    with tempfile.TemporaryDirectory(prefix=f"carry-{part}-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        unpack(wheels, site)
        report = slim(lock, site)
        files = [p for p in site.rglob("*") if p.is_file()]
        unpacked = sum(p.stat().st_size for p in files)
        tarball = Path(tmp) / f"{part}.tar.xz"
        print(
            f"   packing {len(files):,} files, {unpacked / MIB:.0f} MiB (xz -{preset}e)", flush=True
        )
        pack(site, tarball, preset)
        out = carry / part
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        chunks = []
        data_size = tarball.stat().st_size
        with open(tarball, "rb") as fh:
            for index in range(1, 1 + -(-data_size // (chunk_mib * MIB))):
                block = fh.read(chunk_mib * MIB)
                folder = out / f"c{index}"
                folder.mkdir()
                chunk = folder / f"{part}.tar.xz.{index:02d}"
                chunk.write_bytes(block)
                chunks.append(
                    {
                        "path": f"c{index}/{chunk.name}",
                        "bytes": len(block),
                        "sha256": hashlib.sha256(block).hexdigest(),
                    }
                )
        manifest: dict[str, object] = {
            "part": part,
            "tarball": {"bytes": data_size, "sha256": sha256(tarball)},
            "unpacked": {"bytes": unpacked, "files": len(files)},
            "chunks": chunks,
            "wheels": [{"file": name, "sha256": digest} for name, digest in lock.wheels],
            "env": lock.env,
            "report": report,
        }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"   {part}: {data_size / MIB:.2f} MiB in {len(chunks)} chunk(s) -> {out}", flush=True)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    known = sorted(p.stem for p in HERE.glob("*.lock"))
    parser.add_argument(
        "parts", nargs="+", choices=known, metavar="PART", help=f"what to build: {', '.join(known)}"
    )
    parser.add_argument(
        "--carry",
        type=Path,
        default=Path(".carry"),
        help="output folder (git-ignored; default .carry)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(
            os.environ.get("AUTOTUNE_OFFLINE_CACHE", Path.home() / ".cache" / "autotune-offline")
        ),
        help="where downloaded wheels are kept",
    )
    parser.add_argument(
        "--chunk-mib",
        type=int,
        default=40,
        help="largest chunk, MiB (a device run carries 64 MiB in all)",
    )
    parser.add_argument(
        "--preset",
        type=int,
        default=9,
        choices=range(10),
        help="xz preset (9 is the reference; lower is faster, bigger)",
    )
    args = parser.parse_args(argv)
    for part in args.parts:
        build(part, args.cache, args.carry, args.chunk_mib, args.preset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
