"""The stand-in's chat template: messages rendered to one prompt, role markup included.

SGLang renders a chat request with the model's template before tokenizing, so the prompt
a chat request costs includes the role markers, and a multi-turn conversation that resends
its history renders to a prompt that starts with the previous turn's prompt and reply: the
prefix cache hits on it. The markers are Kimi-K2's (the model the stand-in serves).
"""

from __future__ import annotations

from typing import Any

ROLES = ("system", "user", "assistant", "tool")


class ChatError(ValueError):
    """A chat request the server answers with 400 (the message says what is wrong)."""


def _content(message: dict[str, Any], index: int) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: only text counts here
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(str(p) for p in parts)
    raise ChatError(f"messages[{index}].content must be a string or a list of parts")


def render(messages: Any, add_generation_prompt: bool = True) -> str:
    """The prompt text of a chat conversation.

    Raises:
        ChatError: ``messages`` is not a non-empty list of ``{role, content}`` objects.
    """
    if not isinstance(messages, list) or not messages:
        raise ChatError("messages must be a non-empty list")
    out: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise ChatError(f"messages[{i}] needs a role among {', '.join(ROLES)}")
        role = message["role"]
        out.append(f"<|im_{role}|>{role}<|im_middle|>{_content(message, i)}<|im_end|>")
    if add_generation_prompt:
        out.append("<|im_assistant|>assistant<|im_middle|>")
    return "".join(out)
