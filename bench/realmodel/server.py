"""A Messages API server over a local GGUF model (llama-cpp-python), for real-model runs.

    python -m bench.realmodel.server --model PATH [--port 8089] [--ctx 8192]
        [--threads 1] [--threads-batch N] [--cache-mb 1024]

Speaks ``POST /v1/messages`` without streaming: ``system`` as a string or text
blocks, ``messages`` with text (tool_use and tool_result blocks become text),
``tools`` with ``tool_choice`` ``{"type": "tool", "name": ...}`` (the answer is
generated under a llama.cpp grammar built from that tool's JSON schema and
returned as a ``tool_use`` block), ``usage`` counted by the model's tokenizer,
``stop_reason`` ``end_turn``, ``tool_use`` or ``max_tokens``. Sampling parameters
are optional (greedy decoding with a mild repeat penalty when absent, so runs
repeat). A prompt over the
context window is a 400 "prompt is too long", as the API says it.
``POST /v1/messages/count_tokens`` (the same body without ``max_tokens``) answers
``{"input_tokens": N}``: the model's tokens of the prompt ``/v1/messages`` would
build from it.

Recap's calls repeat long prefixes (the system prompt, the template, the summary so
far), and alternate between a few prompts (the summary call, the facts call): the
model's state after each of the latest prompts is kept in RAM (``--cache-mb``), so
a prompt that starts like one of them reads only what follows. Reading a prompt is
done in batches and gains from every core (``--threads-batch``); generating is one
token at a time, and on a machine shared with other work one thread (``--threads``)
is often faster, as threads that wait for a core stall each other. Each call logs a
line on stderr: prompt tokens, how many of them came from a cached prefix, prompt
and generation tokens per second, seconds.

Benchmark tooling, not part of Recap: it imports nothing of Recap and needs only
the standard library and ``llama-cpp-python``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

TOOL_INSTRUCTION = ("Answer only with a JSON object: the input of the tool {name!r} "
                    "({description}). It follows this JSON schema:\n{schema}")
MAX_BODY = 8 * 1024 * 1024
REPEAT_PENALTY = 1.1


class BadRequest(ValueError):
    """A request the Messages API would refuse with a 400."""


class Backend(Protocol):
    """What the server needs of a model (:class:`LlamaBackend` over llama_cpp.Llama)."""

    def create_chat_completion(self, **kwargs: Any) -> Any: ...

    def count_prompt(self, messages: list[dict[str, str]]) -> int:
        """The model's tokens of the prompt ``messages`` make (its chat template)."""
        ...


@dataclass(frozen=True)
class CallStats:
    """One completion's figures: prompt tokens, those read from a cached prefix (the
    context's own or a saved state's), seconds reading the rest, tokens generated and
    seconds generating them (sampling, the grammar and saving the state included)."""

    prompt_tokens: int
    reused: int
    prompt_s: float
    generated: int
    gen_s: float


def _rate(tokens: int, seconds: float) -> str:
    return f"{tokens / seconds:.1f}" if seconds > 0 and tokens > 0 else "-"


def call_line(stats: CallStats | None, usage: dict[str, int], stop: str, seconds: float) -> str:
    """The line logged per call: prompt tokens, cached-prefix tokens reused, prompt
    tok/s, generated tokens, gen tok/s, seconds (from ``usage`` alone without stats)."""
    if stats is None:
        return (f"{usage['input_tokens']} in, {usage['output_tokens']} out, {stop}, "
                f"{seconds:.1f}s")
    read = stats.prompt_tokens - stats.reused
    return (f"prompt {stats.prompt_tokens} tok ({stats.reused} cached), "
            f"{_rate(read, stats.prompt_s)} tok/s; generated {stats.generated} tok, "
            f"{_rate(stats.generated, stats.gen_s)} tok/s; {stop}; {seconds:.1f}s")


def stats_of(evals: list[tuple[int, float]], *, prompt_tokens: int, generated: int,
             seconds: float) -> CallStats:
    """A completion's :class:`CallStats` from its ``evals`` ((tokens, seconds ended
    after the call began) per llama.cpp eval): the first eval reads the prompt's
    uncached part, the others the generated tokens."""
    if not evals:
        return CallStats(prompt_tokens, prompt_tokens, 0.0, generated, seconds)
    read, ended = evals[0]
    return CallStats(prompt_tokens, max(0, prompt_tokens - read), ended, generated,
                     max(0.0, seconds - ended))


@dataclass(frozen=True)
class ChatRequest:
    """A Messages API request as a chat completion's arguments."""

    messages: list[dict[str, str]]
    max_tokens: int
    tool: dict[str, Any] | None  # the forced tool, if any
    sampling: dict[str, float]


def _text(content: Any, *, where: str) -> str:
    """The text of a content (a string or blocks); tool blocks as text."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{where}: content must be a string or a list of blocks")
    parts: list[str] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "tool_use":
            parts.append(json.dumps(block.get("input", {})))
        elif kind == "tool_result":
            parts.append(_text(block.get("content", ""), where=where))
        elif kind in ("image", "document", "thinking", "redacted_thinking"):
            continue  # a text model: nothing to read
        else:
            raise BadRequest(f"{where}: unsupported content block {kind!r}")
    return "\n".join(parts)


def parse_request(body: Any, *, counting: bool = False) -> ChatRequest:
    """The chat completion a Messages API ``body`` asks for; BadRequest naming the
    problem otherwise. ``counting``: a count_tokens body, which has no
    ``max_tokens`` (the request then carries 1)."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    max_tokens = body.get("max_tokens", 1 if counting else None)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise BadRequest("max_tokens: a positive integer is required")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("messages: a non-empty list is required")
    chat: list[dict[str, str]] = []
    system = body.get("system")
    if system is not None:
        chat.append({"role": "system", "content": _text(system, where="system")})
    for i, message in enumerate(raw):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise BadRequest(f"messages.{i}.role must be user or assistant")
        chat.append({"role": role, "content": _text(message.get("content"),
                                                    where=f"messages.{i}")})
    tool = _forced_tool(body.get("tools"), body.get("tool_choice"))
    if tool is not None:
        instruction = TOOL_INSTRUCTION.format(
            name=tool["name"], description=tool.get("description", ""),
            schema=json.dumps(tool["input_schema"], separators=(",", ":")))
        if chat[0]["role"] == "system":
            chat[0] = {"role": "system", "content": chat[0]["content"] + "\n\n" + instruction}
        else:
            chat.insert(0, {"role": "system", "content": instruction})
    # Greedy, so runs repeat; a mild repeat penalty, without which a small model's
    # greedy answer loops until max_tokens.
    sampling: dict[str, float] = {"temperature": 0.0, "repeat_penalty": REPEAT_PENALTY}
    for key in ("temperature", "top_p", "top_k"):
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise BadRequest(f"{key}: a non-negative number is required")
        sampling[key] = value
    return ChatRequest(chat, max_tokens, tool, sampling)


def _forced_tool(tools: Any, choice: Any) -> dict[str, Any] | None:
    """The tool ``tool_choice`` forces, or None (no tools, or the model may answer
    in text: this server then answers in text)."""
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, dict) and isinstance(
            t.get("name"), str) and isinstance(t.get("input_schema"), dict) for t in tools):
        raise BadRequest("tools: a list of {name, input_schema} objects is required")
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return None
    named = [t for t in tools if t["name"] == choice.get("name")]
    if not named:
        raise BadRequest(f"tool_choice names {choice.get('name')!r}, which is not in tools")
    return named[0]


def to_message(completion: Any, request: ChatRequest, *, model: str) -> dict[str, Any]:
    """The Messages API answer for a chat ``completion`` of ``request``."""
    choice = completion["choices"][0]
    text = choice["message"].get("content") or ""
    cut = choice.get("finish_reason") == "length"
    usage = completion.get("usage") or {}
    content: list[dict[str, Any]]
    if request.tool is None:
        content = [{"type": "text", "text": text}] if text else []
        stop = "max_tokens" if cut else "end_turn"
    else:
        try:
            tool_input = json.loads(text)
        except ValueError:
            tool_input = None
        if not isinstance(tool_input, dict):
            # Cut off before the grammar closed the object: what the API gives then.
            content, stop = [], "max_tokens"
        else:
            content = [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24],
                        "name": request.tool["name"], "input": tool_input}]
            stop = "max_tokens" if cut else "tool_use"
    return {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": int(usage.get("prompt_tokens", 0)),
                      "output_tokens": int(usage.get("completion_tokens", 0))}}


GrammarFor = Callable[[dict[str, Any]], Any]


def answer(llm: Backend, body: Any, *, model: str, grammar_for: GrammarFor) -> dict[str, Any]:
    """One Messages API call answered by ``llm``; BadRequest for a request the API
    refuses (a prompt over the context window included)."""
    request = parse_request(body)
    grammar = None if request.tool is None else grammar_for(request.tool["input_schema"])
    try:
        completion = llm.create_chat_completion(
            messages=request.messages, max_tokens=request.max_tokens, grammar=grammar,
            **request.sampling)
    except ValueError as exc:  # llama-cpp: "Requested tokens (n) exceed context window of m"
        if "context window" in str(exc):
            raise BadRequest(f"prompt is too long: {exc}") from None
        raise
    return to_message(completion, request, model=model)


def count(llm: Backend, body: Any) -> dict[str, int]:
    """A count_tokens answer: the model's tokens of the prompt ``body`` makes."""
    return {"input_tokens": llm.count_prompt(parse_request(body, counting=True).messages)}


class _Counted(Exception):
    """Raised by :class:`_PromptProbe` with the prompt's token count."""

    def __init__(self, tokens: int) -> None:
        super().__init__(tokens)
        self.tokens = tokens


class _PromptProbe:
    """The model, as a chat handler sees it, but for its last step: the completion
    of the prompt the handler built is not run; its length is raised instead."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, prompt: Any, **_: Any) -> Any:
        if isinstance(prompt, str | bytes):
            text = prompt.encode() if isinstance(prompt, str) else prompt
            prompt = self._llm.tokenize(text, add_bos=True, special=True)
        raise _Counted(len(prompt))


def slim_ram_cache(capacity_bytes: int) -> Any:
    """llama-cpp-python's ``LlamaRAMCache`` whose saved states keep one row of logits
    instead of a batch's (up to 512 rows of the vocabulary: 300 MB a state for a
    150k vocabulary, which the cache does not count against its capacity). No row is
    read: a restored state evaluates a token before it samples."""
    from llama_cpp import LlamaRAMCache

    class SlimRAMCache(LlamaRAMCache):  # type: ignore[misc]
        def __setitem__(self, key: Any, value: Any) -> None:
            value.scores = value.scores[-1:].copy()
            super().__setitem__(key, value)

    return SlimRAMCache(capacity_bytes=capacity_bytes)


class LlamaBackend:
    """A llama_cpp.Llama as the server's :class:`Backend`: each completion's
    :class:`CallStats` in ``last``."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.last: CallStats | None = None

    def create_chat_completion(self, **kwargs: Any) -> Any:
        evals: list[tuple[int, float]] = []
        run = self.llm.eval
        started = time.perf_counter()

        def timed(tokens: Any) -> None:
            run(tokens)
            evals.append((len(tokens), time.perf_counter() - started))

        self.llm.eval = timed  # the instance's eval shadows the class's: generate() calls it
        try:
            completion = self.llm.create_chat_completion(**kwargs)
        finally:
            del self.llm.eval
        usage = completion.get("usage") or {}
        self.last = stats_of(evals, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                             generated=int(usage.get("completion_tokens", 0)),
                             seconds=time.perf_counter() - started)
        return completion

    def count_prompt(self, messages: list[dict[str, str]]) -> int:
        llm = self.llm
        # The handler create_chat_completion picks, picked the same way.
        handler = llm.chat_handler or llm._chat_handlers.get(llm.chat_format)
        if handler is None:
            from llama_cpp import llama_chat_format

            handler = llama_chat_format.get_chat_completion_handler(llm.chat_format)
        try:
            handler(llama=_PromptProbe(llm), messages=messages)
        except _Counted as counted:
            return counted.tokens
        raise RuntimeError("the chat handler never asked for a completion")


def json_schema_grammar(schema: dict[str, Any]) -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)


def serve(llm: Backend, *, model: str, host: str, port: int,
          grammar_for: GrammarFor = json_schema_grammar) -> ThreadingHTTPServer:
    """A server answering the Messages API with ``llm``, one call at a time."""
    lock = threading.Lock()  # one model, one context: calls take turns

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, kind: str, message: str) -> None:
            self._send(status, {"type": "error", "error": {"type": kind, "message": message}})

        def _answer(self, body: Any) -> dict[str, Any]:
            started = time.monotonic()
            result = answer(llm, body, model=model, grammar_for=grammar_for)
            print(call_line(getattr(llm, "last", None), result["usage"], result["stop_reason"],
                            time.monotonic() - started), file=sys.stderr, flush=True)
            return result

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("", "/health"):
                self._send(200, {"status": "ok", "model": model})
            else:
                self._error(404, "not_found_error", f"no route {self.path}")

        def do_POST(self) -> None:
            route = self.path.split("?")[0].rstrip("/")
            if route not in ("/v1/messages", "/v1/messages/count_tokens"):
                self._error(404, "not_found_error", f"no route {self.path}")
                return
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                self._error(413, "request_too_large", f"body over {MAX_BODY} bytes")
                return
            try:
                body = json.loads(self.rfile.read(length) or b"null")
                with lock:
                    if route.endswith("/count_tokens"):
                        result = count(llm, body)
                    else:
                        result = self._answer(body)
            except (BadRequest, ValueError) as exc:
                self._error(400, "invalid_request_error", str(exc))
                return
            except Exception as exc:  # the model failed: the client may retry
                self._error(500, "api_error", f"{type(exc).__name__}: {exc}")
                return
            self._send(200, result)

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.realmodel.server",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="path of a GGUF model file")
    parser.add_argument("--name", help="model name in answers (default: the file's stem)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--ctx", type=int, default=8192, help="context window in tokens")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads generating, one token at a time (default 1: on a "
                             "machine busy with other work, threads that wait for a core "
                             "stall each other)")
    parser.add_argument("--threads-batch", type=int, default=os.cpu_count() or 1,
                        help="CPU threads reading the prompt, in batches (default: every "
                             "core)")
    parser.add_argument("--cache-mb", type=int, default=1024,
                        help="RAM for the model's state after recent prompts, so a prompt "
                             "that starts like one of them reads only the rest (0: none; "
                             "default 1024)")
    args = parser.parse_args(argv)
    if min(args.threads, args.threads_batch) < 1 or args.cache_mb < 0:
        parser.error("--threads and --threads-batch must be positive, --cache-mb at least 0")
    from pathlib import Path

    from llama_cpp import Llama

    llm = Llama(model_path=args.model, n_ctx=args.ctx, n_threads=args.threads,
                n_threads_batch=args.threads_batch, verbose=False)
    if args.cache_mb:
        llm.set_cache(slim_ram_cache(args.cache_mb * 1024 * 1024))
    name = args.name or Path(args.model).stem
    server = serve(LlamaBackend(llm), model=name, host=args.host, port=args.port)
    print(f"serving {name} on http://{args.host}:{server.server_address[1]} ({args.threads} "
          f"thread(s) generating, {args.threads_batch} reading prompts, prompt cache "
          f"{args.cache_mb} MB)", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
