"""Prompt files -> a sample of requests carried in the spec: JSONL and ShareGPT, read locally.

Trials may run on Ray nodes that do not share the driver's disk, so the driver reads the file
when the space is loaded and a capped, seeded sample (``models.MAX_ITEMS`` requests, at most
``models.MAX_ITEMS_CHARS`` characters) travels in every ``TrialSpec``. Nothing is downloaded.
ShareGPT conversations are filtered as SGLang's and vLLM's benchmarks do (at least two turns;
prompt and answer at least ``min_len`` tokens; prompt at most ``max_prompt_len``, prompt plus
answer at most ``max_total_len``), with lengths estimated at four characters a token since no
tokenizer is at hand.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from autotune.models import (
    DATASET_SOURCES,
    MAX_ITEMS,
    MAX_ITEMS_CHARS,
    DatasetItem,
    Prompts,
    Workload,
    estimate_tokens,
)

__all__ = ["DatasetError", "materialise"]

_USER = frozenset({"human", "user"})
_ASSISTANT = frozenset({"gpt", "assistant", "chatgpt", "bard", "model"})
MAX_TURNS = 64


class DatasetError(ValueError):
    """A prompt file cannot be used; the message names the file (and its line) and the fix."""


def materialise(workload: Workload, base: Path) -> Workload:
    """The workload with its prompt file read into ``prompts.items`` and its path absolute.

    Args:
        workload: a validated workload; returned unchanged unless its source is a file.
        base: the folder relative paths start from (the space file's).

    Raises:
        DatasetError: unreadable file, a bad line, nothing left after filtering.
    """
    prompts = workload.prompts
    if prompts.source not in DATASET_SOURCES or prompts.items:
        return workload
    assert prompts.path is not None
    path = Path(prompts.path).expanduser()
    if not path.is_absolute():
        path = (base / path).resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(
            f"cannot read {path}: {exc.strerror or exc} (the path is relative to the space "
            "file's folder)"
        ) from None
    except UnicodeDecodeError:
        raise DatasetError(f"{path} is not UTF-8 text (save it as UTF-8)") from None
    if prompts.source == "jsonl":
        items = _jsonl(text, path, prompts, need_output=workload.output_len == "dataset")
    else:
        items = _sharegpt(text, path, prompts)
    if not items:
        raise DatasetError(
            f"{path}: no request passes the filters (min_len {prompts.min_len}, max_prompt_len "
            f"{prompts.max_prompt_len}, max_total_len {prompts.max_total_len}; loosen them)"
        )
    sample = _sample(items, workload.seed)
    updated = prompts.model_copy(update={"path": str(path), "items": tuple(sample)})
    return workload.model_copy(update={"prompts": updated})


def _sample(items: list[DatasetItem], seed: int) -> list[DatasetItem]:
    """A seeded sample of at most MAX_ITEMS items and MAX_ITEMS_CHARS characters."""
    order = list(range(len(items)))
    random.Random(f"{seed}:dataset").shuffle(order)
    out: list[DatasetItem] = []
    chars = 0
    for index in order[:MAX_ITEMS]:
        item = items[index]
        size = sum(len(t) for t in item.turns)
        if out and chars + size > MAX_ITEMS_CHARS:
            break
        out.append(item)
        chars += size
    return out


def _jsonl(text: str, path: Path, prompts: Prompts, *, need_output: bool) -> list[DatasetItem]:
    items: list[DatasetItem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise DatasetError(f"{path}:{number}: not JSON ({exc}; one object a line)") from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{path}:{number}: not a JSON object (one object a line)")
        prompt = obj.get(prompts.prompt_field)
        if not isinstance(prompt, str) or not prompt:
            raise DatasetError(
                f"{path}:{number}: no text under {prompts.prompt_field!r} (set "
                "prompts.prompt_field to the key holding the prompt)"
            )
        output = obj.get(prompts.output_field)
        if output is not None and (
            not isinstance(output, int) or isinstance(output, bool) or output < 1
        ):
            raise DatasetError(
                f"{path}:{number}: {prompts.output_field} is {output!r}, not a positive number "
                "of tokens"
            )
        if need_output and output is None:
            raise DatasetError(
                f"{path}:{number}: no {prompts.output_field!r} (output_len: dataset needs it on "
                "every line; or set output_len to a length)"
            )
        length = estimate_tokens(prompt)
        if prompts.max_prompt_len is not None and length > prompts.max_prompt_len:
            continue
        items.append(DatasetItem(turns=(prompt,), prompt_len=length, output_len=output))
    return items


def _sharegpt(text: str, path: Path, prompts: Prompts) -> list[DatasetItem]:
    try:
        data: Any = json.loads(text)
    except ValueError:
        # Also accepted: one conversation object a line.
        data = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    data.append(json.loads(line))
                except ValueError as exc:
                    raise DatasetError(
                        f"{path}:{number}: not JSON ({exc}; ShareGPT is a JSON list of "
                        'objects with "conversations")'
                    ) from None
    if not isinstance(data, list):
        raise DatasetError(f'{path}: not a list of conversations (ShareGPT: [{{"conversations"')
    items: list[DatasetItem] = []
    for entry in data:
        item = _conversation(entry, prompts)
        if item is not None:
            items.append(item)
    return items


def _conversation(entry: Any, prompts: Prompts) -> DatasetItem | None:
    """One ShareGPT conversation as user turns and answer lengths; None when filtered out."""
    if not isinstance(entry, dict):
        return None
    turns = entry.get("conversations", entry.get("conversation"))
    if not isinstance(turns, list):
        return None
    users: list[str] = []
    answers: list[int] = []
    for turn in turns:
        if not isinstance(turn, dict):
            return None
        role, value = turn.get("from", turn.get("role")), turn.get("value", turn.get("content"))
        if not isinstance(value, str):
            return None
        if role in _USER and len(users) == len(answers):
            users.append(value)
        elif role in _ASSISTANT and len(users) == len(answers) + 1:
            answers.append(estimate_tokens(value))
        if len(answers) == MAX_TURNS:
            break
    if not answers:  # fewer than two turns: nothing to answer
        return None
    users = users[: len(answers)]
    prompt_len, output_len = estimate_tokens(users[0]), answers[0]
    if prompt_len < prompts.min_len or output_len < prompts.min_len:
        return None
    if prompts.max_prompt_len is not None and prompt_len > prompts.max_prompt_len:
        return None
    if prompts.max_total_len is not None and prompt_len + output_len > prompts.max_total_len:
        return None
    return DatasetItem(
        turns=tuple(users), prompt_len=prompt_len, output_len=output_len, answer_lens=tuple(answers)
    )


def reference() -> str:
    """The field reference of docs/workloads.md, as Markdown tables from the models' own
    field descriptions (a test holds the document to it)."""
    from pydantic import BaseModel

    from autotune.models import LengthDist

    def table(model: type[BaseModel], prefix: str) -> list[str]:
        out = ["| key | default | meaning |", "| --- | --- | --- |"]
        for name, info in model.model_fields.items():
            if info.is_required():
                default = "required"
            else:
                value = info.get_default(call_default_factory=True)
                default = "" if isinstance(value, BaseModel) else f"`{json.dumps(value)}`"
            text = " ".join((info.description or "").split()).replace("|", "\\|")
            out.append(f"| `{prefix}{name}` | {default} | {text} |")
        return out

    lines = ["### `workload`", "", *table(Workload, "")]
    lines += ["", "### `workload.prompts`", "", *table(Prompts, "prompts.")]
    lines += ["", "### A length distribution", "", *table(LengthDist, "")]
    return "\n".join(lines) + "\n"
