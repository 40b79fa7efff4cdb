"""Exports that run the best configuration in a container: ``docker run`` and Kubernetes.

The container runs the exact argv of the trial (its program as the entrypoint, so no image's
own entrypoint gets in the way) with the exact environment; a redacted secret is taken from
the caller's environment (docker) or from a Kubernetes Secret, never written out.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath
from typing import Any

import yaml

from autotune.core.redact import MASK
from autotune.export.lines import comment, has_masked, header

# Public images of the engines autotune knows; the tag is the caller's to pin.
_IMAGES = {"sglang": "lmsysorg/sglang", "vllm": "vllm/vllm-openai"}
_MODEL_FLAGS = ("--model-path", "--model", "--tokenizer-path")
SECRET_NAME = "autotune-secrets"


def _image(data: dict[str, Any]) -> tuple[str, str]:
    """``(default image or "", note)`` for the engine of ``data``."""
    engine = str(data.get("engine") or "")
    repo = _IMAGES.get(engine)
    version = data["versions"].get("engine")
    if repo is None:
        return "", f"an image with {engine or 'the engine'} installed"
    if version and engine == "vllm":
        return f"{repo}:v{version}", f"vLLM {version}"
    return f"{repo}:latest", f"pin the tag of {engine} {version or '(version not recorded)'}"


def _container_argv(argv: list[str]) -> list[str]:
    """The argv inside a container: the host's interpreter path becomes ``python3``."""
    if argv and PurePosixPath(argv[0]).name.startswith("python") and "/" in argv[0]:
        return ["python3", *argv[1:]]
    return list(argv)


def _model_dirs(argv: list[str]) -> list[str]:
    """Absolute model paths in the command: they must be mounted into the container."""
    dirs = []
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name in _MODEL_FLAGS:
            path = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if path.startswith("/") and path not in dirs:
                dirs.append(path)
    return dirs


def _docker_lines(data: dict[str, Any], port: int, indent: str) -> list[str]:
    argv = _container_argv(data["argv"])
    image, note = _image(data)
    lines = []
    for name, value in data["env"].items():
        if value == MASK:
            lines.append(f'{indent}: "${{{name}:?{name} must be set (redacted in the study)}}"')
    if image:
        lines.append(f'{indent}IMAGE="${{IMAGE:-{image}}}"  # {note}')
    else:
        lines.append(f'{indent}IMAGE="${{IMAGE:?set IMAGE to {note}}}"')
    if has_masked(argv):
        lines.append(f"{indent}# NOTE: arguments shown as {MASK} were secrets; put yours in first.")
    opts = [["docker", "run", "--rm", "--gpus", "all", "--ipc=host"], ["-p", f"{port}:{port}"]]
    for path in _model_dirs(argv):
        opts.append(["-v", f"{path}:{path}:ro"])
    for name, value in data["env"].items():
        # -e NAME alone passes the caller's own value of a redacted secret.
        opts.append(["-e", name] if value == MASK else ["-e", f"{name}={value}"])
    if argv:
        opts.append(["--entrypoint", argv[0]])
    parts = [shlex.join(o) for o in opts] + ['"$IMAGE"']
    if len(argv) > 1:
        parts.append(shlex.join(argv[1:]))
    lines.append(indent + (" \\\n" + indent + "  ").join(parts))
    return lines


def render_docker(ranked: list[dict[str, Any]], port: int) -> str:
    """A bash script that runs the best configuration (or one function per rank) in Docker."""
    first = ranked[0]
    lines = ["#!/usr/bin/env bash", *header(first, "best configuration, in Docker")]
    lines += ["set -euo pipefail", ""]
    if len(ranked) == 1:
        return "\n".join(lines + _docker_lines(first, port, "")) + "\n"
    names = "|".join(f"rank{d['rank']}" for d in ranked)
    for d in ranked:
        lines += header(d, f"rank {d['rank']}")[:3]
        lines.append(f"rank{d['rank']}() {{")
        lines += _docker_lines(d, port, "  ")
        lines += ["}", ""]
    lines += [
        f'# Usage: bash "$0" [{names}]  (default rank1)',
        'case "${1:-rank1}" in',
        f'  {names}) "${{1:-rank1}}" ;;',
        f'  *) echo "usage: $0 [{names}]" >&2; exit 2 ;;',
        "esac",
    ]
    return "\n".join(lines) + "\n"


def _dns_name(text: str) -> str:
    """A Kubernetes object name (DNS-1123 label) made from ``text``."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return name[:63].rstrip("-") or "autotune"


def _deployment(data: dict[str, Any], port: int) -> dict[str, Any]:
    argv = _container_argv(data["argv"])
    image, _note = _image(data)
    name = _dns_name(f"autotune-{data['study']}-rank{data['rank']}")
    env: list[dict[str, Any]] = []
    for key, value in data["env"].items():
        if value == MASK:
            ref = {"name": SECRET_NAME, "key": key}
            env.append({"name": key, "valueFrom": {"secretKeyRef": ref}})
        else:
            env.append({"name": key, "value": value})
    container: dict[str, Any] = {
        "name": "server",
        "image": image or "IMAGE-WITH-THE-ENGINE",
        "command": argv[:1],
        "args": argv[1:],
        "ports": [{"containerPort": port}],
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if env:
        container["env"] = env
    if data.get("gpus"):
        container["resources"] = {"limits": {"nvidia.com/gpu": int(data["gpus"])}}
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    for i, path in enumerate(_model_dirs(argv)):
        volumes.append({"name": f"model-{i}", "hostPath": {"path": path}})
        container["volumeMounts"].append(
            {"name": f"model-{i}", "mountPath": path, "readOnly": True}
        )
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "autotune"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "autotune/study": str(data["study"]),
                "autotune/trial": str(data["trial"]),
                "autotune/metric": f"{data['metric']}={data['value']}",
                "autotune/simulated": str(bool(data["simulated"])).lower(),
            },
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "volumes": volumes},
            },
        },
    }


def render_k8s(ranked: list[dict[str, Any]], port: int) -> str:
    """One Kubernetes Deployment per configuration, best first (a multi-document YAML)."""
    docs = []
    for data in ranked:
        lines = header(data, f"rank {data['rank']} configuration, as a Kubernetes Deployment")
        secrets = [k for k, v in data["env"].items() if v == MASK]
        if secrets:
            lines.append(comment(f"secrets come from Secret {SECRET_NAME!r}: {', '.join(secrets)}"))
        if not data.get("gpus"):
            lines.append(comment("GPU count not recorded: add resources.limits nvidia.com/gpu"))
        body = yaml.safe_dump(_deployment(data, port), sort_keys=False)
        docs.append("\n".join(lines) + "\n" + body)
    return "---\n".join(docs)
