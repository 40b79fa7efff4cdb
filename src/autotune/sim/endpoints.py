"""SGLang's HTTP API, enough of it for benchmarks and readiness checks.

``/generate`` (SGLang's native API), ``/v1/completions`` and ``/v1/chat/completions``
(OpenAI's) all go through the one scheduler (``state.py``); streams are SSE, as SGLang sends
them. ``/metrics`` (with ``--enable-metrics``) uses SGLang's metric names; every figure is
simulated, and ``/get_server_info`` says so.
"""

from __future__ import annotations

import json
import math
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from autotune.sim.chat import ChatError, render
from autotune.sim.radix import CHARS_PER_TOKEN
from autotune.sim.state import SimState

Prompt = str | list[int]


def prompt_of(prompt: Any) -> tuple[Prompt, int]:
    """The prompt (text or token ids) and its token count (text: characters / 4)."""
    if isinstance(prompt, list):
        if prompt and isinstance(prompt[0], int):
            return [int(x) for x in prompt], len(prompt)
        if prompt and isinstance(prompt[0], list):
            return [int(x) for x in prompt[0]], len(prompt[0])
        prompt = prompt[0] if prompt else ""
    text = str(prompt)
    return text, max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def _int(body: dict[str, Any], *names: str, default: int) -> int:
    for name in names:
        if body.get(name) is not None:
            return int(body[name])
    return default


def _asks_usage(body: dict[str, Any]) -> bool:
    """Whether a streamed OpenAI request asks for the usage chunk: SGLang sends it only then."""
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


class Handler(BaseHTTPRequestHandler):
    """One HTTP connection of the stand-in (a thread each, as ThreadingHTTPServer runs them)."""

    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sim: SimState  # set on the subclass built by serve()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request lines are logged the uvicorn way in _log_request

    def setup(self) -> None:
        super().setup()
        # As uvicorn does: without it, Nagle holds the first token behind the header block
        # until the client's delayed ACK (up to 40 ms), a TTFT no real server has.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _log_request(self, code: int) -> None:
        host, port = self.client_address[:2]
        self.sim.log.line(
            f'INFO:     {host}:{port} - "{self.command} {self.path} HTTP/1.1" {code} '
            f"{'OK' if code == 200 else 'Error'}",
            rank=None,
        )

    def _send(self, code: int, data: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self._log_request(code)

    def _json(self, code: int, body: Any) -> None:
        self._send(code, json.dumps(body).encode(), "application/json")

    def _error(self, message: str) -> None:
        self._json(400, {"object": "error", "message": message, "type": "BadRequest", "code": 400})

    def _empty(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if self.sim.phase != "starting":  # SGLang's port is not even open then: nothing to log
            self._log_request(code)

    def _body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:  # answered 400 by the caller
            return None
        return body if isinstance(body, dict) else None

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        phase, path = self.sim.phase, self.path.split("?")[0]
        if phase == "starting":
            return self._empty(503)
        if path in ("/health", "/health_generate"):
            return self._empty(200 if phase == "ready" else 503)
        if path in ("/get_server_info", "/server_info"):
            return self._json(200, self.sim.server_info())
        if path == "/metrics" and self.sim.launch.ns.enable_metrics:
            text = self.sim.metrics_text().encode()
            return self._send(200, text, "text/plain; version=0.0.4; charset=utf-8")
        if path in ("/get_model_info", "/model_info"):
            ns = self.sim.launch.ns
            return self._json(
                200,
                {
                    "model_path": ns.model_path,
                    "tokenizer_path": ns.model_path,
                    "is_generation": True,
                    "simulated": True,
                },
            )
        if path == "/v1/models":
            name = self.sim.launch.served_name
            return self._json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": name,
                            "object": "model",
                            "created": int(time.time()),
                            "owned_by": "sglang",
                            "root": name,
                            "max_model_len": self.sim.cfg.context_length,
                        }
                    ],
                },
            )
        return self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        if self.sim.phase == "starting":
            return self._empty(503)
        path = self.path.split("?")[0]
        body = self._body()
        if body is None:
            return self._json(400, {"error": {"message": "invalid JSON body"}})
        if path == "/generate":
            return self._generate(body)
        if path == "/v1/completions":
            return self._completions(body)
        if path == "/v1/chat/completions":
            return self._chat(body)
        return self._json(404, {"detail": "Not Found"})

    # ---- streaming helpers

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: str) -> None:
        raw = data.encode()
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()

    def _event(self, payload: Any) -> None:
        self._chunk(f"data: {json.dumps(payload)}\n\n")

    def _end_stream(self) -> None:
        self._chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self._log_request(200)

    def _run(
        self, prompt: Prompt, n_prompt: int, max_new: int, rid: str
    ) -> tuple[Iterator[list[str]], Callable[[], int]] | None:
        """Start a request; None when it was refused (answered 400 here)."""
        try:
            stream = self.sim.open(prompt, n_prompt, max_new, rid)
        except ValueError as exc:
            self._error(str(exc))
            return None
        return iter(stream), lambda: int(getattr(stream, "cached_tokens", 0))

    def _usage(self, n_prompt: int, done: int, cached: int) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": n_prompt,
            "completion_tokens": done,
            "total_tokens": n_prompt + done,
        }
        if self.sim.launch.ns.enable_cache_report:  # SGLang reports cached tokens only then
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage

    # ---- endpoints

    def _generate(self, body: dict[str, Any]) -> None:
        params = body.get("sampling_params") or {}
        try:
            max_new = int(params.get("max_new_tokens", 128))
        except (TypeError, ValueError):  # a client error, answered
            return self._json(400, {"error": {"message": "max_new_tokens must be an integer"}})
        raw = body.get("input_ids") if body.get("input_ids") is not None else body.get("text", "")
        prompt, n_prompt = prompt_of(raw)
        rid = str(body.get("rid") or uuid.uuid4().hex)
        started = time.monotonic()
        run = self._run(prompt, n_prompt, max_new, rid)
        if run is None:
            return None
        tokens_iter, cached = run

        def meta(done: int, final: bool) -> dict[str, Any]:
            info: dict[str, Any] = {
                "id": rid,
                "prompt_tokens": n_prompt,
                "completion_tokens": done,
                "cached_tokens": cached(),
                "finish_reason": None,
            }
            if final:
                info["finish_reason"] = {"type": "length", "length": done}
                info["e2e_latency"] = time.monotonic() - started
            if self.sim.cfg.spec is not None:
                info["spec_verify_ct"] = max(1, done)
            return info

        text, done, stream = "", 0, bool(body.get("stream"))
        try:
            if stream:
                self._start_stream()
            for tokens in tokens_iter:
                text += "".join(tokens)
                done += len(tokens)
                if stream:
                    self._event({"text": text, "meta_info": meta(done, done >= max_new)})
            if stream:
                if max_new <= 0:
                    self._event({"text": "", "meta_info": meta(0, True)})
                return self._end_stream()
            return self._json(200, {"text": text, "meta_info": meta(done, True)})
        except (BrokenPipeError, ConnectionResetError):  # the client left
            return None

    def _completions(self, body: dict[str, Any]) -> None:
        raw = body.get("prompt", "")
        if isinstance(raw, list) and len(raw) > 1 and not isinstance(raw[0], int):
            return self._json(
                400, {"error": {"message": "the simulator serves one prompt per request"}}
            )
        try:
            max_new = _int(body, "max_tokens", default=16)
        except (TypeError, ValueError):  # a client error, answered
            return self._json(400, {"error": {"message": "max_tokens must be an integer"}})
        prompt, n_prompt = prompt_of(raw)
        rid = f"cmpl-{uuid.uuid4().hex}"
        model, created = body.get("model") or self.sim.launch.served_name, int(time.time())
        run = self._run(prompt, n_prompt, max_new, rid)
        if run is None:
            return None
        tokens_iter, cached = run

        def chunk(text: str, finish: str | None) -> dict[str, Any]:
            return {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}],
                "usage": None,
            }

        text, done, stream = "", 0, bool(body.get("stream"))
        try:
            if stream:
                self._start_stream()
            for tokens in tokens_iter:
                delta = "".join(tokens)
                text += delta
                done += len(tokens)
                if stream:
                    self._event(chunk(delta, "length" if done >= max_new else None))
            usage = self._usage(n_prompt, done, cached())
            if stream:
                if _asks_usage(body):
                    self._event({**chunk("", None), "choices": [], "usage": usage})
                return self._end_stream()
            out = chunk(text, "length")
            return self._json(200, {**out, "usage": usage})
        except (BrokenPipeError, ConnectionResetError):  # the client left
            return None

    def _chat(self, body: dict[str, Any]) -> None:
        try:
            prompt_text = render(body.get("messages"))
            max_new = _int(body, "max_completion_tokens", "max_tokens", default=128)
        except ChatError as exc:
            return self._error(str(exc))
        except (TypeError, ValueError):  # a client error, answered
            return self._error("max_tokens must be an integer")
        prompt, n_prompt = prompt_of(prompt_text)
        rid = f"chatcmpl-{uuid.uuid4().hex}"
        model, created = body.get("model") or self.sim.launch.served_name, int(time.time())
        run = self._run(prompt, n_prompt, max_new, rid)
        if run is None:
            return None
        tokens_iter, cached = run

        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            return {
                "id": rid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }

        text, done, stream = "", 0, bool(body.get("stream"))
        try:
            if stream:
                self._start_stream()
                self._event(chunk({"role": "assistant", "content": ""}, None))
            for tokens in tokens_iter:
                delta = "".join(tokens)
                text += delta
                done += len(tokens)
                if stream:
                    self._event(chunk({"content": delta}, "length" if done >= max_new else None))
            usage = self._usage(n_prompt, done, cached())
            if stream:
                if _asks_usage(body):
                    self._event({**chunk({}, None), "choices": [], "usage": usage})
                return self._end_stream()
            message = {"role": "assistant", "content": text}
            return self._json(
                200,
                {
                    "id": rid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
                    "usage": usage,
                },
            )
        except (BrokenPipeError, ConnectionResetError):  # the client left
            return None
