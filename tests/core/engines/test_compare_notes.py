"""`ctxtui inspect FILE --compare` replays the note tool as the agent applies it: the client engine's
replay of a session whose model kept notes sends, call by call, the requests the session sent (the
summaries carry the same notes message)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from core.agent import Agent
from core.compaction import CompactionSettings
from core.config import Settings
from core.engines.compare import REPLAY_STAMP, compare_file
from core.markers import notes_message
from core.model.base import ModelEvent, ModelResponse
from core.model.offline import OfflineModel
from core.sessions.economics import read_samples

Message = dict[str, Any]


class NotingModel:
    """Scripted replies; summaries written by the offline model, as the replay writes them."""

    name = "offline"
    label = "offline"
    offline = True

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        self.replies = replies
        self.summarizer = OfflineModel()

    async def stream(self, **_: Any) -> AsyncIterator[ModelEvent]:
        content = self.replies.pop(0)
        has_tools = any(block["type"] == "tool_use" for block in content)
        yield ModelResponse(content=content, stop_reason="tool_use" if has_tools else "end_turn")

    async def summarize(self, text: str, focus: str | None) -> str:
        return await self.summarizer.summarize(text, focus)

    async def aclose(self) -> None:
        pass


def note(number: int, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_note_{number}", "name": "note", "input": tool_input}


def say(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


async def test_the_client_replay_carries_the_notes_the_session_kept(tmp_path: Path) -> None:
    replies = [
        [note(1, text="keep: the API key is read from ENV only"), note(2, text="drop me")],
        [note(3, remove=2)],
        say("noted " * 300),
        say("more detail " * 300),
        say("done"),
    ]
    compaction = CompactionSettings(context_char_limit=3_000)
    settings = Settings(workdir=tmp_path, offline=True, compaction=compaction)
    agent = Agent.from_settings(settings, model=NotingModel(replies))  # type: ignore[arg-type]
    agent.archive.stamp = lambda: REPLAY_STAMP  # the replay names its transcripts alike
    for request in ("keep notes", "tell me more", "and now?"):
        async for _ in agent.run_turn(request):
            pass
    assert agent.notes == ("keep: the API key is read from ENV only",)
    assert {"role": "user", "content": notes_message(agent.notes)} in agent.messages
    await agent.aclose()
    path = agent.view.session_path
    assert path is not None
    sent = [sample["chars_after"] for sample in read_samples(path) if sample.get("kind") != "summary"]
    data = await compare_file(path, settings)
    client = data["engines"][0]
    assert client["engine"] == "client" and client["summaries"] >= 1
    assert client["chars"] == sent
