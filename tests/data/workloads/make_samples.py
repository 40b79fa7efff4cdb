"""Writes the small prompt files of this folder: own text from a seeded generator, nothing
downloaded. ``sharegpt_small.json`` is in ShareGPT's conversation format (some conversations
of several turns, a few without an answer, which the loader filters out); ``prompts.jsonl``
holds ``{"prompt", "output_len"}`` lines.

    .venv/bin/python tests/data/workloads/make_samples.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from autotune.node.workload import WORDS

HERE = Path(__file__).resolve().parent
TOPICS = [
    "sorting a list",
    "a train timetable",
    "baking bread",
    "tuning a server",
    "a garden plan",
    "reading a log",
    "learning chess",
    "a bike repair",
    "writing a letter",
    "saving energy",
]


def main() -> None:
    rng = random.Random(17)

    def text(words: int) -> str:
        parts = []
        while words > 0:
            k = min(words, rng.randint(6, 18))
            parts.append(" ".join(rng.choices(WORDS, k=k)).capitalize() + ".")
            words -= k
        return " ".join(parts)

    conversations = []
    for i in range(120):
        turns: list[dict[str, str]] = []
        for _ in range(rng.choice([1, 2, 2, 3, 4])):
            question = f"Question about {rng.choice(TOPICS)}: " + text(
                int(rng.lognormvariate(3.3, 0.8)) + 2
            )
            answer = text(int(rng.lognormvariate(4.3, 0.7)) + 3)
            turns += [{"from": "human", "value": question}, {"from": "gpt", "value": answer}]
        if i % 23 == 0:
            turns = turns[:1]  # no answer: filtered out
        conversations.append({"id": f"conv{i:03d}", "conversations": turns})
    (HERE / "sharegpt_small.json").write_text(json.dumps(conversations, indent=1) + "\n")
    with (HERE / "prompts.jsonl").open("w") as out:
        for _ in range(200):
            prompt = text(int(rng.lognormvariate(4.0, 0.6)) + 4)
            out.write(json.dumps({"prompt": prompt, "output_len": rng.randint(16, 160)}) + "\n")


if __name__ == "__main__":
    main()
