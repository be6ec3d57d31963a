"""ctxtui's own state never leaves the workdir: a `.ctxtui`, `.ctxtui/sessions`, `.task_outputs` or
spill directory that is a symlink (a cloned repository can hold one), or a link planted in place of a
state file, is refused by every writer; nothing is written through it (issue 18, item 6)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from core.agent import Agent
from core.archive import Archive, ArchiveError
from core.config import Settings
from core.private import OutsideWorkdirError, make_private_dir, open_private_dir
from core.tools import ToolBox, Workspace
from tests.support.cli import ctxtui

TOOL_RESULTS = ".task_outputs/tool-results"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / "sessions").mkdir(parents=True)
    (folder / "tool-results").mkdir()
    return folder


def everything_in(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def link(work: Path, name: str, target: Path) -> None:
    (work / name).parent.mkdir(parents=True, exist_ok=True)
    (work / name).symlink_to(target, target_is_directory=True)


# --------------------------------------------------------------------------- the helper


def test_a_private_dir_is_made_0700_with_a_gitignore_at_the_top(work: Path) -> None:
    make_private_dir(work / ".ctxtui" / "sessions", work)
    assert stat.S_IMODE((work / ".ctxtui").stat().st_mode) == 0o700
    assert stat.S_IMODE((work / ".ctxtui" / "sessions").stat().st_mode) == 0o700
    assert (work / ".ctxtui" / ".gitignore").read_text() == "*\n"
    assert not (work / ".ctxtui" / "sessions" / ".gitignore").exists()


@pytest.mark.parametrize("linked", [".ctxtui", ".ctxtui/sessions"])
def test_a_symlink_on_the_way_is_refused_and_nothing_is_made_behind_it(work: Path, outside: Path,
                                                                         linked: str) -> None:
    link(work, linked, outside)
    before = everything_in(outside)
    mode = stat.S_IMODE(outside.stat().st_mode)
    with pytest.raises(OutsideWorkdirError) as caught:
        make_private_dir(work / ".ctxtui" / "sessions" / "deeper", work)
    assert linked in str(caught.value) and "\n" not in str(caught.value)
    assert everything_in(outside) == before
    assert stat.S_IMODE(outside.stat().st_mode) == mode  # not tightened through the link either


def test_a_file_in_place_of_a_directory_is_refused(work: Path) -> None:
    (work / ".ctxtui").write_text("not a directory")
    with pytest.raises(OutsideWorkdirError):
        os.close(open_private_dir(work / ".ctxtui" / "sessions", work))


# --------------------------------------------------------------------------- the session log


@pytest.mark.parametrize("linked", [".ctxtui", ".ctxtui/sessions"])
async def test_the_session_log_does_not_write_through_a_symlinked_state_dir(work: Path, outside: Path,
                                                                            linked: str) -> None:
    link(work, linked, outside / "sessions" if linked.endswith("sessions") else outside)
    before = everything_in(outside)
    agent = Agent.from_settings(Settings(workdir=work, offline=True))
    events = [event async for event in agent.run_turn("help")]
    await agent.aclose()
    assert everything_in(outside) == before
    assert agent.session is not None and agent.session.error is not None
    assert "symlink" in agent.session.error
    notices = [event.message for event in events if getattr(event, "kind", None) == "session"]
    assert notices and "symlink" in notices[0]


def test_headless_says_the_session_was_not_saved_through_a_symlinked_state_dir(work: Path, outside: Path) -> None:
    link(work, ".ctxtui", outside)
    result = ctxtui("-p", "help", "--offline", "--workdir", str(work))
    assert result.returncode == 0, result.stderr
    assert everything_in(outside) == ["sessions", "tool-results"]
    assert "this session was not saved completely" in result.stderr and ".ctxtui is a symlink" in result.stderr


async def test_a_link_planted_in_place_of_the_session_file_is_not_followed(work: Path, outside: Path) -> None:
    agent = Agent.from_settings(Settings(workdir=work, offline=True))
    assert agent.session is not None
    target = outside / "victim.txt"
    target.write_text("keep me\n")
    agent.session.path.parent.mkdir(parents=True)
    agent.session.path.symlink_to(target)
    [event async for event in agent.run_turn("help")]
    await agent.aclose()
    assert target.read_text() == "keep me\n"
    assert agent.session.error is not None


# --------------------------------------------------------------------------- the archive and the spill files


@pytest.mark.parametrize("linked", [".task_outputs", TOOL_RESULTS])
async def test_long_bash_output_is_not_spilled_through_a_symlinked_archive_dir(work: Path, outside: Path,
                                                                              linked: str) -> None:
    link(work, linked, outside / "tool-results" if linked == TOOL_RESULTS else outside)
    before = everything_in(outside)
    box = ToolBox(Workspace(work), output_limit=2_000, spill_dir=work / TOOL_RESULTS)
    result = await box.run("bash", {"command": "yes spilled-line | head -c 50000"})
    assert everything_in(outside) == before
    assert "could not be saved" in result.content and "symlink" in result.content


async def test_long_bash_output_is_spilled_inside_the_workdir(work: Path) -> None:
    box = ToolBox(Workspace(work), output_limit=2_000, spill_dir=work / TOOL_RESULTS)
    result = await box.run("bash", {"command": "yes spilled-line | head -c 50000"})
    spilled = list((work / TOOL_RESULTS).glob("bash-*.txt"))
    assert len(spilled) == 1 and spilled[0].stat().st_size == 50_000, result.content
    assert stat.S_IMODE(spilled[0].stat().st_mode) == 0o600
    assert not list((work / TOOL_RESULTS).glob(".*.tmp"))


async def test_the_archive_refuses_a_symlinked_dir_with_one_line(work: Path, outside: Path) -> None:
    link(work, ".task_outputs", outside)
    with pytest.raises(ArchiveError) as caught:
        await Archive(work).save_tool_result("toolu_1", "text")
    assert "\n" not in str(caught.value) and "symlink" in str(caught.value)
    assert everything_in(outside) == ["sessions", "tool-results"]


async def test_the_archive_manifest_is_not_appended_through_a_planted_link(work: Path, outside: Path) -> None:
    (work / TOOL_RESULTS).mkdir(parents=True)
    victim = outside / "victim.txt"
    victim.write_text("keep me\n")
    (work / TOOL_RESULTS / ".manifest").symlink_to(victim)
    with pytest.raises(ArchiveError):
        await Archive(work).save_tool_result("toolu_1", "text")
    assert victim.read_text() == "keep me\n"


async def test_the_archive_still_writes_and_records_in_a_plain_workdir(work: Path) -> None:
    archive = Archive(work)
    path = await archive.save_tool_result("toolu_1", "text")
    assert (work / path).read_text() == "text" and archive.is_own(path, "toolu_1")
    manifest = [json.loads(line) for line in (work / TOOL_RESULTS / ".manifest").read_text().splitlines()]
    assert [entry["tool_use_id"] for entry in manifest] == ["toolu_1"]


def test_the_proxy_recorder_does_not_write_through_a_symlinked_state_dir(work: Path, outside: Path) -> None:
    from core.proxy.record import Recorder, RecordError
    from core.proxy.redact import NO_SECRETS

    link(work, ".ctxtui", outside)
    with pytest.raises(RecordError) as caught:
        Recorder(work).write("20260101-000000-000-abcdef", {"type": "proxy_request"}, NO_SECRETS, first=True)
    assert ".ctxtui is a symlink" in str(caught.value) and "\n" not in str(caught.value)
    assert everything_in(outside) == ["sessions", "tool-results"]
