"""Secrets and private files: bash runs without the secret environment variables (API keys, tokens,
passwords); the archive and the spill files are readable by the user only and ignored by git."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.archive import Archive
from core.tools.processes import is_secret_name
from tests.support.tools import make_tools

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-very-secret-1",
    "ANTHROPIC_AUTH_TOKEN": "very-secret-2",
    "ANTHROPIC_BASE_URL": "http://very-secret-3.invalid",
    "OPENAI_API_KEY": "very-secret-4",
    "GITHUB_TOKEN": "very-secret-5",
    "AWS_SECRET_ACCESS_KEY": "very-secret-6",
    "AWS_SESSION_TOKEN": "very-secret-7",
    "DB_PASSWORD": "very-secret-8",
    "STRIPE_SECRET": "very-secret-9",
}


async def test_bash_environment_holds_no_secrets(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CTXTUI_TEST_HARMLESS", "still-here")
    result = await make_tools(ws).run("bash", {"command": "env"})
    assert not result.is_error
    assert "very-secret" not in result.content
    for name in SECRETS:
        assert f"{name}=" not in result.content
    assert "CTXTUI_TEST_HARMLESS=still-here" in result.content
    assert "PATH=" in result.content


@pytest.mark.parametrize("name", [*SECRETS, "MY_API_KEY", "NPM_TOKEN", "GH_TOKEN", "SECRET_KEY", "ANTHROPIC_MODEL"])
def test_secret_names_are_recognised(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "TERM", "PWD", "SHELL", "USER", "SSH_AUTH_SOCK", "TMUX"])
def test_ordinary_names_are_kept(name: str) -> None:
    assert not is_secret_name(name)


@settings(max_examples=100, deadline=None)
@given(prefix=st.from_regex(r"[A-Z][A-Z0-9]{0,10}", fullmatch=True),
       suffix=st.sampled_from(["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD"]))
def test_every_key_token_secret_or_password_variable_is_secret(prefix: str, suffix: str) -> None:
    assert is_secret_name(prefix + suffix)


# -- private files ---------------------------------------------------------------------------------


async def test_archive_and_spill_are_private_and_ignored_by_git(ws: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        archive = Archive(ws)
        result_path = await archive.save_tool_result("toolu_1", "x" * 100)
        batch = await archive.save_tool_results([("toolu_2", "y")])
        transcript = await archive.write_transcript([{"role": "user", "content": "hi"}])
        box = make_tools(ws, output_limit=100, spill_dir=archive.tool_results_dir)
        spilled = await box.run("bash", {"command": "head -c 5000 /dev/zero | tr '\\0' z"})
    finally:
        os.umask(old_umask)
    assert "is saved at" in spilled.content
    spill = next(archive.tool_results_dir.glob("bash-*.txt"))
    for directory in [ws / ".transcripts", ws / ".task_outputs", archive.tool_results_dir]:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for file in [ws / result_path, ws / batch[0], ws / transcript, spill]:
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    for top in [".transcripts", ".task_outputs"]:
        assert (ws / top / ".gitignore").read_text() == "*\n"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_git_status_of_the_project_stays_clean(ws: Path) -> None:
    git("init", "-q", str(ws))
    archive = Archive(ws)
    await archive.save_tool_result("toolu_1", "saved")
    await archive.write_transcript([{"role": "user", "content": "hi"}])
    await make_tools(ws, output_limit=10, spill_dir=archive.tool_results_dir).run("bash", {"command": "seq 1000"})
    assert git("-C", str(ws), "status", "--porcelain") == ""


async def test_existing_archive_directories_are_tightened(ws: Path) -> None:
    (ws / ".transcripts").mkdir(mode=0o755)
    (ws / ".transcripts").chmod(0o755)
    await Archive(ws).write_transcript([{"role": "user", "content": "hi"}])
    assert stat.S_IMODE((ws / ".transcripts").stat().st_mode) == 0o700
