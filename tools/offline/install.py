"""Install the parts that ``build.py`` packed, on a machine with no package registry.

    python3 tools/offline/install.py                 # every part under .carry/
    eval "$(python3 tools/offline/install.py --env)" # ... and export PYTHONPATH and the parts' env

A part's chunks may arrive in several runs of a warm machine (a run carries 64 MiB at most):
each run stages the chunks it brought (checked by sha256) in ``$AUTOTUNE_CARRY_STAGE``
(``/tmp/carry-stage``); once every chunk of a part is staged, the tarball is rebuilt, checked
and unpacked into ``$AUTOTUNE_CARRY_SITE/<part>`` (``/tmp/carry/<part>``). A part already
unpacked from the same tarball is left as it is, so a second run costs nothing.
Stdlib only: it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

STAGE = Path(os.environ.get("AUTOTUNE_CARRY_STAGE", "/tmp/carry-stage"))
SITE = Path(os.environ.get("AUTOTUNE_CARRY_SITE", "/tmp/carry"))
ENGINES = ("sglang", "vllm")  # parts that each bring an engine and its own dependencies


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def install(folder: Path, log: list[str]) -> Path | None:
    """Stage what is here of one part; unpack it once whole. Returns its site, or None."""
    manifest = json.loads((folder / "manifest.json").read_text())
    part = manifest["part"]
    site = SITE / part
    done = site / ".carry-installed"
    if done.exists() and done.read_text().strip() == manifest["tarball"]["sha256"]:
        log.append(f"{part}: installed ({site})")
        return site
    stage = STAGE / part
    stage.mkdir(parents=True, exist_ok=True)
    for chunk in manifest["chunks"]:
        here, staged = folder / chunk["path"], stage / Path(chunk["path"]).name
        if here.exists() and not (staged.exists() and _sha256(staged) == chunk["sha256"]):
            if _sha256(here) != chunk["sha256"]:
                sys.exit(f"{part}: {here} is damaged (sha256 differs from the manifest)")
            shutil.copyfile(here, staged)
    missing = [c["path"] for c in manifest["chunks"] if not (stage / Path(c["path"]).name).exists()]
    if missing:
        log.append(
            f"{part}: staged {len(manifest['chunks']) - len(missing)}/"
            f"{len(manifest['chunks'])} chunks; carry {', '.join(missing)} next"
        )
        return None
    tarball = stage / f"{part}.tar.xz"
    with open(tarball, "wb") as out:
        for chunk in manifest["chunks"]:
            with open(stage / Path(chunk["path"]).name, "rb") as fh:
                shutil.copyfileobj(fh, out)
    if _sha256(tarball) != manifest["tarball"]["sha256"]:
        sys.exit(f"{part}: the rebuilt tarball's sha256 differs from the manifest")
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    with tarfile.open(tarball, "r:xz") as tar:
        tar.extractall(site, filter="data")
    tarball.unlink()
    done.write_text(manifest["tarball"]["sha256"] + "\n")
    mib = manifest["unpacked"]["bytes"] / (1 << 20)
    log.append(
        f"{part}: unpacked {manifest['unpacked']['files']:,} files ({mib:.0f} MiB) into {site}"
    )
    return site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parts", nargs="*", help="parts to install (default: all in --carry)")
    parser.add_argument("--carry", type=Path, default=Path(".carry"))
    parser.add_argument(
        "--env",
        action="store_true",
        help="print shell exports (PYTHONPATH, the parts' env) on stdout",
    )
    args = parser.parse_args(argv)
    folders = sorted(p.parent for p in args.carry.glob("*/manifest.json"))
    if args.parts:
        folders = [f for f in folders if f.name in args.parts]
    if not folders:
        sys.exit(f"nothing to install: no {args.carry}/<part>/manifest.json")
    log: list[str] = []
    sites, env = [], {}
    for folder in folders:
        site = install(folder, log)
        if site is not None:
            sites.append(str(site))
            env.update(json.loads((folder / "manifest.json").read_text()).get("env", {}))
    engines = [f.name for f in folders if f.name in ENGINES]
    if args.env and len(engines) > 1:
        log.append(
            f"note: {' and '.join(engines)} on one path: each brings its own dependencies at "
            "other versions; name the parts (--env node ENGINE) to run one engine"
        )
    print("\n".join(log), file=sys.stderr)
    if args.env:
        path = os.pathsep.join([*sites, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        print(f"export PYTHONPATH={path}")
        for name, value in sorted(env.items()):
            print(f"export {name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
