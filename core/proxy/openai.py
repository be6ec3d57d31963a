"""OpenAI's wire formats as the proxy's model reads them: Chat Completions and Responses, converted to
the history shape the inspector shows (the Messages API's: system, user and assistant messages of
text, tool_use, tool_result and thinking blocks).

Pure functions, no I/O. What the proxy forwards is never converted: the client and the upstream get
the bytes as sent, and a recording keeps the body as the client sent it. Only the view's copy is:

- system and developer messages (and `instructions`) become the system prompt;
- user text, assistant text and refusals become text blocks; `tool_calls` / `function_call` items
  (and the other `*_call` items) become `tool_use` blocks; `role: "tool"` messages and
  `*_call_output` items become `tool_result` blocks of a user message; reasoning summaries become
  `thinking` blocks;
- what cannot be read (encrypted reasoning, a compaction item, images, audio, files, item
  references) becomes a placeholder text block naming what it was and its size in bytes (`opaque`):
  never dropped, never shown as its data.

Usage is read as the API reports it: the cached part of the prompt only when the reply says
(`prompt_tokens_details.cached_tokens`, `input_tokens_details.cached_tokens`), else unknown. OpenAI
reports no cache writes, so they are unknown too (never taken as 0).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from core.proxy.limits import MAX_BLOCKS, MAX_PROBLEMS
from core.proxy.sse import Reply, checked_usage, decode_body, loads, parse_sse, whole_events
from core.proxy.sse import UndecodableBody as _Undecodable
from core.usage.figures import token_figure
from core.usage.prices import Usage, Window

Wire = Literal["messages", "chat", "responses"]
JSONDict = dict[str, Any]

WATCHED: dict[str, Wire] = {
    "/v1/messages": "messages",
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
}
"""The paths whose `POST` exchanges are modelled and recorded, and the wire format of each."""

_OPENAI_PREFIXES = (
    "/v1/chat/",
    "/v1/responses",
    "/v1/completions",
    "/v1/embeddings",
    "/v1/conversations",
)
DEFAULT_OPENAI_UPSTREAM = "https://api.openai.com"

# Context windows of common OpenAI models, in tokens (OpenAI's model pages, December 2026), longest
# prefix first: the proxy names the window from this table when the model is one of them.
OPENAI_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-5.1-codex", 400_000),
    ("gpt-5-codex", 400_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("codex-mini", 200_000),
)


def wire_of(method: str, path: str) -> Wire | None:
    """The wire format of an exchange the proxy models (None: forwarded only)."""
    return WATCHED.get(path) if method == "POST" else None


def is_openai_path(path: str) -> bool:
    """A path of OpenAI's API (its upstream is OPENAI_BASE_URL's unless --upstream is given)."""
    return path.startswith(_OPENAI_PREFIXES)


def openai_upstream(value: str | None) -> str:
    """The OpenAI upstream from OPENAI_BASE_URL's value: the client's base URL ends in `/v1`, the proxy
    forwards `/v1/...` paths, so a trailing `/v1` is left off."""
    url = (value or "").strip().rstrip("/") or DEFAULT_OPENAI_UPSTREAM
    return url[: -len("/v1")] if url.endswith("/v1") else url


def error_body(kind: str, message: str, code: str | None = None) -> bytes:
    """An error in OpenAI's shape (`{"error": {"message", "type", "code"}}`), as its SDKs read one."""
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()


def window_of(model: str | None) -> Window | None:
    """The window of an OpenAI model from the table above (None: not one of them)."""
    name = (model or "").lower().rpartition("/")[2]
    for prefix, tokens in OPENAI_WINDOWS:
        if name.startswith(prefix):
            return Window(tokens, "table")
    return None


# --- requests ------------------------------------------------------------------------------------


def request_view(body: JSONDict, wire: Wire) -> JSONDict:
    """The request as the Messages API would carry it: `model`, `system`, `messages`, `tools`, `stream`,
    and every other top-level field as sent."""
    if wire == "chat":
        system, messages = _chat_messages(body.get("messages"))
        skip = {"messages", "tools"}
    else:
        system, messages = _response_items(body.get("input"))
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            system.insert(0, {"type": "text", "text": instructions})
        elif isinstance(instructions, list):  # input items, as a stored prompt spells them
            listed, _ = _response_items(
                [{**item, "role": "system"} if isinstance(item, dict) else item for item in instructions]
            )
            system[:0] = listed
        skip = {"input", "instructions", "tools"}
    view: JSONDict = {key: value for key, value in body.items() if key not in skip}
    view["messages"] = messages
    if system:
        view["system"] = system
    tools = body.get("tools")
    if isinstance(tools, list):
        view["tools"] = [_tool(tool) for tool in tools]
    return view


def _text(value: str) -> JSONDict:
    return {"type": "text", "text": value}


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


OPAQUE = "opaque"  # the key of a placeholder block's facts: {"item": what it was, "bytes": its size}


def opaque(what: str, value: Any) -> JSONDict:
    """A placeholder for what the view cannot read: a text block that says what it was and its size in
    bytes (its data is left out), the same facts under `OPAQUE`. A text block, so every reader of the
    history (the tree, the breakdown, `inspect`) keeps it in its place."""
    size = _size(value)
    return {
        "type": "text",
        "text": f"[opaque {what[:60]}: {size:,} bytes, not readable by ctxtui]",
        OPAQUE: {"item": what[:60], "bytes": size},
    }


def _parts(content: Any) -> list[JSONDict]:
    """Message content (a string, or a list of parts of either API) as blocks."""
    if isinstance(content, str):
        return [_text(content)] if content else []
    if not isinstance(content, list):
        return [] if content is None else [opaque("content", content)]
    blocks: list[JSONDict] = []
    for part in content[:MAX_BLOCKS]:
        if isinstance(part, str):
            blocks.append(_text(part))
            continue
        if not isinstance(part, dict):
            blocks.append(opaque("part", part))
            continue
        kind = str(part.get("type", ""))
        if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            blocks.append(_text(part["text"]))
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            blocks.append(_text(part["refusal"]))
        else:
            blocks.append(opaque(kind or "part", part))  # image_url, input_image, input_audio, file, ...
    return blocks


def _arguments(value: Any) -> Any:
    """A tool call's arguments: the JSON object they spell, else the text as sent (under `arguments`)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed, _ = loads(value)
        except ValueError:
            return {"arguments": value}
        return parsed if isinstance(parsed, dict) else {"arguments": parsed}
    return {} if value is None else {"arguments": value}


def _result_content(value: Any) -> Any:
    """A tool output as tool_result content: text as it is, a list of parts as blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _parts(value)
    return json.dumps(value, ensure_ascii=False, default=str)


class _History:
    """Blocks appended by role; consecutive blocks of one role are one message."""

    def __init__(self) -> None:
        self.system: list[JSONDict] = []
        self.messages: list[JSONDict] = []

    def add(self, role: str, blocks: list[JSONDict]) -> None:
        if not blocks:
            return
        if role in ("system", "developer"):
            self.system.extend(blocks)
            return
        role = "assistant" if role == "assistant" else "user"
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == role:
            last["content"].extend(blocks)
        else:
            self.messages.append({"role": role, "content": list(blocks)})


def _chat_messages(messages: Any) -> tuple[list[JSONDict], list[JSONDict]]:
    history = _History()
    for message in messages[:MAX_BLOCKS] if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            history.add("user", [opaque("message", message)])
            continue
        role = str(message.get("role", "user"))
        if role in ("tool", "function"):
            tool_id = message.get("tool_call_id") or message.get("name") or ""
            result = {
                "type": "tool_result",
                "tool_use_id": str(tool_id),
                "content": _result_content(message.get("content")),
            }
            history.add("user", [result])
            continue
        blocks: list[JSONDict] = []
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if role == "assistant" and isinstance(reasoning, str) and reasoning:
            blocks.append({"type": "thinking", "thinking": reasoning})
        blocks.extend(_parts(message.get("content")))
        if isinstance(message.get("refusal"), str) and message["refusal"]:
            blocks.append(_text(message["refusal"]))
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict):
                function = call.get("function") if isinstance(call.get("function"), dict) else {}
                assert isinstance(function, dict)
                name = function.get("name") or call.get("type") or "tool"
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": str(call.get("id", "")),
                        "name": str(name),
                        "input": _arguments(function.get("arguments", call.get("custom", {}))),
                    }
                )
        legacy = message.get("function_call")
        if isinstance(legacy, dict):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": str(legacy.get("name", "")),
                    "name": str(legacy.get("name", "function")),
                    "input": _arguments(legacy.get("arguments")),
                }
            )
        if isinstance(message.get("audio"), dict):
            blocks.append(opaque("audio", message["audio"]))
        history.add(role, blocks)
    return history.system, history.messages


_OUTPUTS = (
    "function_call_output",
    "custom_tool_call_output",
    "computer_call_output",
    "local_shell_call_output",
)


def _response_items(items: Any) -> tuple[list[JSONDict], list[JSONDict]]:
    history = _History()
    if isinstance(items, str):
        history.add("user", [_text(items)])
        return history.system, history.messages
    for item in items[:MAX_BLOCKS] if isinstance(items, list) else ():
        if not isinstance(item, dict):
            history.add("user", [opaque("item", item)])
            continue
        role, blocks = response_item(item)
        history.add(role, blocks)
    return history.system, history.messages


def response_item(item: JSONDict) -> tuple[str, list[JSONDict]]:
    """One Responses item (input or output) as a role and its blocks."""
    kind = str(item.get("type") or ("message" if "role" in item else ""))
    if kind == "message":
        return str(item.get("role", "user")), _parts(item.get("content"))
    if kind == "reasoning":
        blocks: list[JSONDict] = []
        texts = [
            str(part.get("text", ""))
            for key in ("summary", "content")
            for part in (item.get(key) or [] if isinstance(item.get(key), list) else [])
            if isinstance(part, dict)
        ]
        if any(texts):
            blocks.append({"type": "thinking", "thinking": "\n\n".join(text for text in texts if text)})
        if item.get("encrypted_content"):
            blocks.append(opaque("reasoning (encrypted)", item["encrypted_content"]))
        return "assistant", blocks or [opaque("reasoning", item)]
    if kind in _OUTPUTS:
        output = item.get("output")
        return "user", [
            {
                "type": "tool_result",
                "tool_use_id": str(item.get("call_id", "")),
                "content": _result_content(output),
            }
        ]
    if kind == "function_call" or kind == "custom_tool_call":
        arguments = item.get("arguments") if kind == "function_call" else item.get("input")
        return "assistant", [
            {
                "type": "tool_use",
                "id": str(item.get("call_id") or item.get("id") or ""),
                "name": str(item.get("name", kind)),
                "input": _arguments(arguments),
            }
        ]
    if kind.endswith("_call"):  # web_search_call, file_search_call, local_shell_call, computer_call, mcp_call
        fields = {key: value for key, value in item.items() if key not in ("type", "id", "call_id", "status")}
        return "assistant", [
            {
                "type": "tool_use",
                "id": str(item.get("call_id") or item.get("id") or ""),
                "name": kind,
                "input": fields,
            }
        ]
    # compaction, item_reference, image_generation results and whatever comes next: seen, not read
    role = "assistant" if kind in ("compaction", "image_generation_call") else "user"
    return role, [opaque(kind or "item", item)]


def _tool(tool: Any) -> Any:
    """A tool definition in the Messages API's shape where it is a function; others as sent, named by type."""
    if not isinstance(tool, dict):
        return tool
    function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    assert isinstance(function, dict)
    if tool.get("type") == "function" and isinstance(function.get("name"), str):
        converted: JSONDict = {"name": function["name"]}
        if function.get("description") is not None:
            converted["description"] = function["description"]
        converted["input_schema"] = function.get("parameters") or {"type": "object"}
        return converted
    return {"name": str(tool.get("name") or tool.get("type") or "tool"), **tool}


# --- replies -------------------------------------------------------------------------------------


def read_openai_reply(
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
    wire: Wire,
    *,
    limit: int | None = None,
    cut: bool = False,
) -> Reply:
    """The reply in `body` as the client got it, its message in the Messages API's shape (its `usage`
    the API's own, as sent)."""
    try:
        raw = decode_body(body, content_encoding, limit, partial=cut)
    except _Undecodable as error:
        return Reply(problems=[str(error)])
    text = raw.decode("utf-8", errors="replace")
    if (content_type or "").split(";", 1)[0].strip().lower() == "text/event-stream":
        if cut:
            text = whole_events(text)
        return _chat_stream(text) if wire == "chat" else _responses_stream(text)
    if not text.strip():
        return Reply()
    try:
        data, _ = loads(text)
    except ValueError:
        return Reply(problems=["the body is not JSON"])
    if not isinstance(data, dict):
        return Reply(problems=["the body is not a JSON object"])
    if isinstance(data.get("error"), dict) and not data.get("output") and not data.get("choices"):
        return Reply(error=data["error"])
    message = _chat_reply(data) if wire == "chat" else _responses_reply(data)
    return Reply(message=message, complete=True)


def _chat_reply(data: JSONDict) -> JSONDict:
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    assert isinstance(message, dict)
    _, converted = _chat_messages([{**message, "role": "assistant"}])
    reply: JSONDict = {
        "id": data.get("id"),
        "role": "assistant",
        "model": data.get("model"),
        "content": converted[0]["content"] if converted else [],
        "stop_reason": choice.get("finish_reason"),
    }
    if isinstance(data.get("usage"), dict):
        reply["usage"] = data["usage"]
    return reply


def _responses_reply(data: JSONDict) -> JSONDict:
    output = data.get("output")
    blocks: list[JSONDict] = []
    for item in output[:MAX_BLOCKS] if isinstance(output, list) else ():
        if isinstance(item, dict):
            blocks.extend(response_item(item)[1])
    reply: JSONDict = {
        "id": data.get("id"),
        "role": "assistant",
        "model": data.get("model"),
        "content": blocks,
        "stop_reason": data.get("status"),
    }
    if isinstance(data.get("usage"), dict):
        reply["usage"] = data["usage"]
    return reply


def _events(text: str, reply: Reply) -> list[JSONDict]:
    found: list[JSONDict] = []
    for event in parse_sse(text):
        if event.data.strip() == "[DONE]":
            reply.complete = True
            continue
        reply.events += 1
        try:
            data, _ = loads(event.data)
        except ValueError:
            if len(reply.problems) < MAX_PROBLEMS:
                reply.problems.append(f"event {event.event[:40]}: data is not JSON")
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def _chat_stream(text: str) -> Reply:
    """Chat chunks (`choices[].delta`) added up: text, reasoning, tool calls by index, the last usage."""
    reply = Reply()
    texts: list[str] = []
    thinking: list[str] = []
    calls: dict[int, JSONDict] = {}
    head: JSONDict = {"role": "assistant"}
    for chunk in _events(text, reply):
        if isinstance(chunk.get("error"), dict):
            reply.error = chunk["error"]
            continue
        head.setdefault("id", chunk.get("id"))
        head.setdefault("model", chunk.get("model"))
        if isinstance(chunk.get("usage"), dict):
            head["usage"] = chunk["usage"]
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason") is not None:
                head["stop_reason"] = choice["finish_reason"]
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            assert isinstance(delta, dict)
            if isinstance(delta.get("content"), str):
                texts.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                texts.append(delta["refusal"])
            for key in ("reasoning_content", "reasoning"):
                if isinstance(delta.get(key), str):
                    thinking.append(delta[key])
            for call in delta.get("tool_calls") or [] if isinstance(delta.get("tool_calls"), list) else []:
                if not isinstance(call, dict):
                    continue
                index = call.get("index", 0)
                if not isinstance(index, int) or not 0 <= index < MAX_BLOCKS:
                    continue
                slot = calls.setdefault(index, {"id": "", "name": "", "arguments": []})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") if isinstance(call.get("function"), dict) else {}
                assert isinstance(function, dict)
                slot["name"] = function.get("name") or slot["name"]
                if isinstance(function.get("arguments"), str):
                    slot["arguments"].append(function["arguments"])
    content: list[JSONDict] = []
    if thinking:
        content.append({"type": "thinking", "thinking": "".join(thinking)})
    if texts:
        content.append(_text("".join(texts)))
    for _, slot in sorted(calls.items()):
        content.append(
            {
                "type": "tool_use",
                "id": str(slot["id"]),
                "name": str(slot["name"]),
                "input": _arguments("".join(slot["arguments"])),
            }
        )
    if reply.events or content:
        reply.message = {**head, "content": content}
    return reply


def _responses_stream(text: str) -> Reply:
    """Responses events: the final `response` of `response.completed` (or `.incomplete`, `.failed`) when
    it came, else the items done and the text deltas seen so far."""
    reply = Reply()
    done: dict[int, JSONDict] = {}
    deltas: dict[int, list[str]] = {}
    final: JSONDict | None = None
    started: JSONDict = {}
    for event in _events(text, reply):
        kind = str(event.get("type", ""))
        response = event.get("response") if isinstance(event.get("response"), dict) else None
        if kind == "response.created" and response is not None:
            started = response
        elif kind in ("response.completed", "response.incomplete", "response.failed") and response:
            final = response
            reply.complete = True
            if isinstance(response.get("error"), dict):
                reply.error = response["error"]
        elif kind == "error":
            reply.error = {key: value for key, value in event.items() if key != "type"}
        elif kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            index = event.get("output_index", len(done))
            if isinstance(index, int) and 0 <= index < MAX_BLOCKS:
                done[index] = event["item"]
        elif kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
            index = event.get("output_index", 0)
            if isinstance(index, int) and 0 <= index < MAX_BLOCKS:
                deltas.setdefault(index, []).append(event["delta"])
    if final is not None:
        reply.message = _responses_reply(final)
        return reply
    if reply.events:
        output: list[Any] = [done[index] for index in sorted(done)]
        for index, parts in sorted(deltas.items()):
            if index not in done:
                output.append({"type": "message", "role": "assistant", "content": [_text("".join(parts))]})
        reply.message = _responses_reply({**started, "output": output})
    return reply


# --- usage ---------------------------------------------------------------------------------------


def usage_of(usage: JSONDict | None) -> tuple[Usage | None, JSONDict | None, list[str]]:
    """The call's Usage from an OpenAI `usage` (either API), the checked mapping to record, and notes.

    `input_tokens` is the uncached part of the prompt when the reply says what was cached; when it
    does not, the whole prompt, with the cache read unknown. Cache writes are unknown (not reported).
    """
    if usage is None:
        return None, None, []
    checked, notes = checked_usage(usage)
    prompt = token_figure(checked.get("prompt_tokens", checked.get("input_tokens")))
    output = token_figure(checked.get("completion_tokens", checked.get("output_tokens")))
    details = checked.get("prompt_tokens_details") or checked.get("input_tokens_details")
    cached = token_figure(details.get("cached_tokens")) if isinstance(details, dict) else None
    reasoning_details = checked.get("completion_tokens_details") or checked.get("output_tokens_details")
    reasoning = (
        token_figure(reasoning_details.get("reasoning_tokens"))
        if isinstance(reasoning_details, dict)
        else None
    )
    figures: dict[str, int | None] = {
        "input_tokens": None if prompt is None else prompt - min(cached or 0, prompt),
        "output_tokens": output,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": None,
    }
    if reasoning is not None:
        figures["thinking_tokens"] = reasoning
    return Usage.from_figures(figures), checked, notes
