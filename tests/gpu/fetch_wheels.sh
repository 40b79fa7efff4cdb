#!/usr/bin/env bash
# Download (here, where PyPI is reachable) the wheels the H200 test machine lacks, into .whl/.
# The machine has torch, transformers, httpx, rich, typer, PyYAML, psutil and nvidia-ml-py.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d .whl \
  fastapi starlette uvicorn pydantic pydantic-core annotated-types typing-inspection \
  'typing-extensions>=4.14' opentelemetry-api 'openai<2' distro jiter sniffio \
  optuna sqlalchemy alembic Mako colorlog
du -sh .whl
