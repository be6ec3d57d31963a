"""Issue 8 classes that live in the tools: secrets, private state, confinement under a concurrent swap,
ctxtui's own state, glob patterns, names and bytes, and bounds on bash."""

from __future__ import annotations

import asyncio
import fnmatch
import os
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.archive import Archive
from core.tools import ToolBox, ToolOutput, Workspace
from core.tools.globmatch import compile_segment, match_segment
from core.tools.processes import is_secret_name


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "f.txt").write_text("SECRET\n")
    (directory / "only_outside.txt").write_text("SECRET\n")
    return directory


def tools(root: Path, **kwargs: Any) -> ToolBox:
    return ToolBox(Workspace(root), **kwargs)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting to be reaped counts as dead)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return data[data.rindex(")") + 2 :].split()[0] != "Z"


async def eventually(predicate: Any, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return bool(predicate())


# -- 2. secrets and private state ------------------------------------------------------------

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
    result = await tools(ws).run("bash", {"command": "env"})
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


async def test_archive_and_spill_are_private_and_ignored_by_git(ws: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        archive = Archive(ws)
        result_path = await archive.save_tool_result("toolu_1", "x" * 100)
        batch = await archive.save_tool_results([("toolu_2", "y")])
        transcript = await archive.write_transcript([{"role": "user", "content": "hi"}])
        box = tools(ws, output_limit=100, spill_dir=archive.tool_results_dir)
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
    await tools(ws, output_limit=10, spill_dir=archive.tool_results_dir).run("bash", {"command": "seq 1000"})
    assert git("-C", str(ws), "status", "--porcelain") == ""


async def test_existing_archive_directories_are_tightened(ws: Path) -> None:
    (ws / ".transcripts").mkdir(mode=0o755)
    (ws / ".transcripts").chmod(0o755)
    await Archive(ws).write_transcript([{"role": "user", "content": "hi"}])
    assert stat.S_IMODE((ws / ".transcripts").stat().st_mode) == 0o700


# -- 3. confinement under a concurrent swap --------------------------------------------------


class Swapper:
    """Swaps ws/d between a real directory and a symlink to outside, in a tight loop."""

    def __init__(self, ws: Path, outside: Path) -> None:
        self.directory = ws / "d"
        self.parked = ws / "d_parked"
        self.outside = outside
        self.stop = threading.Event()
        self.swaps = 0
        self.strays = 0
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _clear(self) -> None:
        """write_file created d in a gap between two steps (inside, as it should): move it aside."""
        self.strays += 1
        os.rename(self.directory, self.directory.with_name(f"stray{self.strays}"))

    def _loop(self) -> None:
        try:
            while not self.stop.is_set():
                os.rename(self.directory, self.parked)
                while True:
                    try:
                        os.symlink(self.outside, self.directory)
                        break
                    except FileExistsError:
                        self._clear()
                os.unlink(self.directory)
                while True:
                    try:
                        os.rename(self.parked, self.directory)
                        break
                    except OSError:
                        self._clear()
                self.swaps += 1
        except BaseException as error:
            self.failure = error

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


async def test_no_read_or_write_lands_outside_while_a_directory_is_swapped(ws: Path, outside: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    box = tools(ws)
    outcomes: set[str] = set()
    with Swapper(ws, outside) as swapper:
        for n in range(300):
            read = await box.run("read_file", {"path": "d/f.txt"})
            assert "SECRET" not in read.content
            outcomes.add("read ok" if read == ToolOutput("inside\n") else "read refused")
            wrote = await box.run("write_file", {"path": f"d/new{n}.txt", "content": "planted"})
            outcomes.add("write ok" if not wrote.is_error else "write refused")
            edit = await box.run("edit_file", {"path": "d/f.txt", "old_text": "inside", "new_text": "inside"})
            outcomes.add("edit ok" if not edit.is_error else "edit refused")
            listed = await box.run("glob", {"pattern": "d/*"})
            assert "only_outside" not in listed.content
    assert swapper.failure is None and swapper.swaps > 0
    assert sorted(os.listdir(outside)) == ["f.txt", "only_outside.txt"]
    assert (outside / "f.txt").read_text() == "SECRET\n"
    assert "read ok" in outcomes and "write ok" in outcomes  # the tools kept working meanwhile


@pytest.mark.timeout(30)
async def test_special_files_are_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    box = tools(ws)
    for name, tool_input in [
        ("read_file", {"path": "pipe"}),
        ("edit_file", {"path": "pipe", "old_text": "a", "new_text": "b"}),
        ("write_file", {"path": "pipe", "content": "x"}),
    ]:
        result = await box.run(name, tool_input)
        assert result.is_error and "FIFO" in result.content, (name, result)
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


# -- 4. the tools reach ctxtui's own state ---------------------------------------------------


def tree(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


@pytest.mark.parametrize(
    "path",
    [
        ".ctxtui/session-1.jsonl",
        ".ctxtui/new/dir/planted.jsonl",
        ".task_outputs/tool-results/toolu_1.txt",
        ".transcripts/transcript_1.jsonl",
        ".git/config",
        ".git/hooks/pre-commit",
        "./.git//hooks/post-checkout",
        "hooks-alias/pre-push",
    ],
)
async def test_writes_to_ctxtui_state_and_git_config_are_refused(ws: Path, path: str) -> None:
    for directory in [".ctxtui", ".task_outputs/tool-results", ".transcripts", ".git/hooks"]:
        (ws / directory).mkdir(parents=True, exist_ok=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".task_outputs/tool-results/toolu_1.txt").write_text("archived\n")
    (ws / "hooks-alias").symlink_to(".git/hooks")
    before = tree(ws)
    box = tools(ws)
    for name, tool_input in [
        ("write_file", {"path": path, "content": "planted"}),
        ("edit_file", {"path": path, "old_text": "archived", "new_text": "planted"}),
    ]:
        result = await box.run(name, tool_input)
        assert result.is_error, (name, result)
        if name == "write_file" or (ws / path).exists():
            assert "Refusing to write" in result.content and "\n" not in result.content, result
    assert tree(ws) == before
    assert (ws / ".task_outputs/tool-results/toolu_1.txt").read_text() == "archived\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"


def contents(root: Path) -> dict[Path, bytes | None]:
    """Every path under `root` with the bytes of each file (None for a directory or a link to one)."""
    return {item: item.read_bytes() if item.is_file() else None for item in root.rglob("*")}


@pytest.mark.parametrize(
    "path",
    [
        ".git/commondir",  # points git at a directory of the writer's choosing
        ".git/info/attributes",
        ".git/objects/ab/cdef",
        ".git/new/dir/file",
        ".git",  # a gitdir pointer file in place of the directory
        "sub/.git",  # the same one level down (a nested repository)
        "vendor/lib/.git/config",
        ".GIT/config",  # one name on a case-insensitive disk
        "src/../.git/HEAD",
        "git-alias/commondir",  # a symlink to .git
    ],
)
async def test_no_path_with_a_git_component_is_written(ws: Path, path: str) -> None:
    """Issue 18, item 3: config and hooks were refused, but any other file under `.git` (commondir, info,
    objects) or a `.git` file pointing elsewhere made the next `git status` run a command."""
    (ws / ".git" / "info").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "vendor" / "lib" / ".git").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "git-alias").symlink_to(".git")
    before = contents(ws)
    box = tools(ws)
    for name, tool_input in [
        ("write_file", {"path": path, "content": "gitdir: /tmp/evil\n"}),
        ("edit_file", {"path": path, "old_text": "ref", "new_text": "planted"}),
    ]:
        result = await box.run(name, tool_input)
        assert result.is_error, (name, result)
        if name == "write_file":
            assert "Refusing to write" in result.content and ".git" in result.content.lower(), result
        preview = await box.permission_preview(name, tool_input)
        assert "Refusing to write" in preview or "would fail" in preview, preview
    assert contents(ws) == before


@pytest.mark.parametrize("path", ["sub/.gitignore", ".github/workflows/ci.yml", "git/config", "docs/.git-notes",
                                  "my.git/readme"])
async def test_names_that_only_look_like_git_are_written(ws: Path, path: str) -> None:
    result = await tools(ws).run("write_file", {"path": path, "content": "fine\n"})
    assert not result.is_error, result
    assert (ws / path).read_text() == "fine\n"


async def test_the_archive_stays_readable(ws: Path) -> None:
    (ws / ".task_outputs/tool-results").mkdir(parents=True)
    (ws / ".task_outputs/tool-results/toolu_1.txt").write_text("archived\n")
    box = tools(ws)
    assert await box.run("read_file", {"path": ".task_outputs/tool-results/toolu_1.txt"}) == ToolOutput("archived\n")
    assert not (await box.run("write_file", {"path": "git/config", "content": "fine"})).is_error


# -- 5. glob patterns ------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "pattern",
    ["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "**/**/**/**/**/**/**/**/**/*b", "?*?*?*?*?*?*?*?*?*?*?*?*?*b"],
)
async def test_pathological_patterns_finish(ws: Path, pattern: str) -> None:
    (ws / ("a" * 200)).write_text("")
    deep = ws.joinpath(*(["a"] * 12))
    deep.mkdir(parents=True)
    (deep / ("a" * 100)).write_text("")
    result = await tools(ws).run("glob", {"pattern": pattern})
    assert result == ToolOutput(f"No files match {pattern}")


async def test_glob_time_budget_gives_a_clear_error(ws: Path) -> None:
    for n in range(20):
        (ws / f"f{n}.txt").write_text("")
    result = await tools(ws, glob_time_budget=0).run("glob", {"pattern": "**/*.txt"})
    assert result.is_error and "time budget" in result.content and "\n" not in result.content


async def test_cancelled_glob_returns_at_once_and_its_walk_stops(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.tools.glob as glob_module

    entered = threading.Event()
    release = threading.Event()
    real_entries = glob_module._entries

    def slow_entries(fd: int) -> Any:
        entered.set()
        release.wait(10)  # a directory that takes "forever" to list
        yield from real_entries(fd)

    monkeypatch.setattr(glob_module, "_entries", slow_entries)
    (ws / "a.txt").write_text("")
    task = asyncio.create_task(tools(ws).run("glob", {"pattern": "**/*"}))
    assert await eventually(entered.is_set)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # returned while the walk was still blocked
    assert any(t.name == "ctxtui-glob" for t in threading.enumerate())
    release.set()
    assert await eventually(lambda: not any(t.name == "ctxtui-glob" for t in threading.enumerate()))


async def test_overlong_pattern_is_refused(ws: Path) -> None:
    result = await tools(ws).run("glob", {"pattern": "*" * 5000})
    assert result.is_error and "at most" in result.content


_GLOB_CHARS = st.sampled_from(list("ab*?[]!-."))


@settings(max_examples=400, deadline=None)
@given(segment=st.text(_GLOB_CHARS, max_size=8), name=st.text(st.sampled_from(list("ab-.!]")), max_size=8))
def test_segment_matcher_agrees_with_fnmatch(segment: str, name: str) -> None:
    assert match_segment(compile_segment(segment), name) == fnmatch.fnmatchcase(name, segment)


# -- 10. names and bytes ---------------------------------------------------------------------


def raw_path(root: Path, name: bytes) -> Path:
    return root / os.fsdecode(name)


async def test_undecodable_file_names_are_escaped_visibly(ws: Path) -> None:
    os.close(os.open(os.fsencode(ws) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    (ws / "plain.txt").write_text("")
    box = tools(ws)
    listed = await box.run("glob", {"pattern": "*.txt"})
    listed.content.encode("utf-8")
    lines = listed.content.splitlines()
    assert lines[0] == "caf\\xe9.txt" and lines[1] == "plain.txt"
    assert "\\xNN" in lines[-1]
    raw_path(ws, b"caf\xe9.txt").write_bytes(b"by its shown name\n")
    assert await box.run("read_file", {"path": "caf\\xe9.txt"}) == ToolOutput("by its shown name\n")
    edited = await box.run("edit_file", {"path": "caf\\xe9.txt", "old_text": "shown", "new_text": "escaped"})
    assert not edited.is_error and "caf\\xe9.txt" in edited.content
    assert raw_path(ws, b"caf\xe9.txt").read_bytes() == b"by its escaped name\n"
    shown = await box.run("bash", {"command": "ls"})
    shown.content.encode("utf-8")
    assert "caf" in shown.content


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 60, "PNG image"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 100, "JPEG image"),
        (b"GIF89a" + b"\x00" * 10, "GIF image"),
        (b"%PDF-1.7\n%\xe2\xe3\n" + b"\x00" * 10, "PDF document"),
        (b"PK\x03\x04" + b"\x00" * 30, "ZIP archive"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 10, "gzip archive"),
        (b"\x7fELF\x02\x01\x01" + b"\x00" * 50, "ELF executable"),
        (b"some\x00binary\x00data", None),
    ],
    ids=["png", "jpeg", "gif", "pdf", "zip", "gzip", "elf", "nul-bytes"],
)
async def test_binary_files_are_named_not_dumped(ws: Path, data: bytes, kind: str | None) -> None:
    (ws / "blob").write_bytes(data)
    box = tools(ws)
    result = await box.run("read_file", {"path": "blob"})
    assert not result.is_error
    assert f"binary file, {len(data):,} bytes" in result.content
    if kind:
        assert kind in result.content
    assert len(result.content) < 200
    edit = await box.run("edit_file", {"path": "blob", "old_text": "some", "new_text": "x"})
    assert edit.is_error and "binary file" in edit.content
    assert (ws / "blob").read_bytes() == data


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
async def test_utf16_and_utf32_files_are_decoded_and_edited_in_their_encoding(ws: Path, codec: str) -> None:
    text = "naïve café ✓\nline two\n"
    bom = {"utf-16": b"", "utf-16-be": b"\xfe\xff", "utf-32": b""}[codec]
    (ws / "wide.txt").write_bytes(bom + text.encode(codec))
    box = tools(ws)
    read = await box.run("read_file", {"path": "wide.txt"})
    assert read.content.startswith(text) and "UTF-" in read.content.splitlines()[-1]
    edited = await box.run("edit_file", {"path": "wide.txt", "old_text": "line two", "new_text": "zwei ✓"})
    assert not edited.is_error, edited
    assert (ws / "wide.txt").read_bytes() == bom + text.replace("line two", "zwei ✓").encode(codec)


async def test_latin1_file_is_edited_by_its_characters_and_keeps_its_bytes(ws: Path) -> None:
    (ws / "legacy.txt").write_bytes("café = 1\nna\xefve\n".encode("cp1252"))
    box = tools(ws)
    read = await box.run("read_file", {"path": "legacy.txt"})
    assert read.content.startswith("café = 1\nnaïve\n") and "cp1252" in read.content
    edited = await box.run("edit_file", {"path": "legacy.txt", "old_text": "café = 1", "new_text": "café = 2"})
    assert not edited.is_error and "cp1252" in edited.content
    assert (ws / "legacy.txt").read_bytes() == "café = 2\nnaïve\n".encode("cp1252")
    refused = await box.run("edit_file", {"path": "legacy.txt", "old_text": "café = 2", "new_text": "咖啡"})
    assert refused.is_error and "encoding" in refused.content
    assert (ws / "legacy.txt").read_bytes() == "café = 2\nnaïve\n".encode("cp1252")


_NAME_BYTES = st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))


@settings(max_examples=60, deadline=None)
@given(name=_NAME_BYTES, data=st.binary(max_size=300))
def test_every_tool_output_is_valid_utf8(tmp_path_factory: pytest.TempPathFactory, name: bytes, data: bytes) -> None:
    root = tmp_path_factory.mktemp("names")
    path = os.fsencode(root) + b"/" + name
    with open(path, "wb") as handle:
        handle.write(data)
    shown_name = os.fsdecode(name)  # how a model would echo the name back (with surrogates)
    box = tools(root)

    async def all_outputs() -> list[ToolOutput]:
        return [
            await box.run("glob", {"pattern": "*"}),
            await box.run("glob", {"pattern": "**"}),
            await box.run("read_file", {"path": shown_name}),
            await box.run("edit_file", {"path": shown_name, "old_text": "\udcff", "new_text": "x"}),
            await box.run("write_file", {"path": shown_name + "\udcfe", "content": "x\udcff"}),
            await box.run("bash", {"command": "ls; cat -- *"}),
        ]

    for output in asyncio.run(all_outputs()):
        output.content.encode("utf-8")


# -- 11. bounded bash ------------------------------------------------------------------------


async def test_spill_file_is_capped_and_the_result_says_so(ws: Path) -> None:
    spill_dir = ws / ".task_outputs" / "tool-results"
    box = tools(ws, output_limit=1_000, spill_dir=spill_dir, spill_byte_limit=100_000)
    result = await box.run("bash", {"command": "yes | head -c 3000000"})
    saved = next(spill_dir.glob("bash-*.txt"))
    assert saved.stat().st_size == 100_000
    assert saved.read_bytes() == b"y\n" * 50_000
    assert "100,000-byte cap" in result.content and "3,000,000 bytes" in result.content
    assert len(result.content) < 1_500


async def test_model_chosen_timeout_is_capped_with_a_note(ws: Path) -> None:
    box = tools(ws, max_bash_timeout=1)
    result = await box.run("bash", {"command": "sleep 30", "timeout": 1e300})
    assert result.is_error
    assert "above the 1s maximum" in result.content and "timed out after 1s" in result.content
    huge_int = await box.run("bash", {"command": "true", "timeout": 10**400})
    assert "maximum" in huge_int.content and "[exit code 0]" in huge_int.content


async def test_setsid_child_does_not_outlive_the_timeout(ws: Path) -> None:
    command = (
        "setsid sh -c 'echo $$ > child.pid; exec sleep 60' > /dev/null 2>&1 < /dev/null & "
        "while [ ! -s child.pid ]; do sleep 0.05; done; sleep 30"
    )
    result = await tools(ws).run("bash", {"command": command, "timeout": 2})
    assert "timed out" in result.content
    pid = int((ws / "child.pid").read_text())
    assert await eventually(lambda: not alive(pid))


async def test_setsid_child_does_not_outlive_a_cancel(ws: Path) -> None:
    command = "setsid sh -c 'echo $$ > child.pid; exec sleep 60' > /dev/null 2>&1 < /dev/null & sleep 30"
    task = asyncio.create_task(tools(ws).run("bash", {"command": command}))
    assert await eventually(lambda: (ws / "child.pid").exists() and (ws / "child.pid").read_text().strip() != "")
    pid = int((ws / "child.pid").read_text())
    assert alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await eventually(lambda: not alive(pid))


# -- permission preview ----------------------------------------------------------------------


async def test_preview_of_a_new_file_is_a_diff_from_nothing(ws: Path) -> None:
    preview = await tools(ws).permission_preview("write_file", {"path": "new.py", "content": "a = 1\nb = 2\n"})
    assert preview.splitlines() == ["--- /dev/null", "+++ b/new.py", "@@ -0,0 +1,2 @@", "+a = 1", "+b = 2"]
    assert not (ws / "new.py").exists()


async def test_preview_of_a_replacement_and_an_edit_shows_the_change(ws: Path) -> None:
    (ws / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    box = tools(ws)
    written = await box.permission_preview("write_file", {"path": "app.py", "content": "a = 1\nb = 20\nc = 3\n"})
    edited = await box.permission_preview("edit_file", {"path": "app.py", "old_text": "b = 2\n", "new_text": "b = 20\n"})
    for preview in (written, edited):
        assert "--- a/app.py" in preview and "+++ b/app.py" in preview
        assert "-b = 2\n" in preview and "+b = 20\n" in preview and " a = 1\n" in preview
    assert (ws / "app.py").read_text() == "a = 1\nb = 2\nc = 3\n"
    (ws / ".git").mkdir()
    refused = await box.permission_preview("write_file", {"path": ".git/config", "content": "x"})
    assert "Refusing to write" in refused
    failing = await box.permission_preview("edit_file", {"path": "app.py", "old_text": "zzz", "new_text": "y"})
    assert "would fail" in failing and "not found" in failing
    assert await box.permission_preview("bash", {"command": "rm -rf /"}) == ""


async def test_preview_of_a_huge_change_is_cut_with_a_visible_line(ws: Path) -> None:
    content = "".join(f"line {n}\n" for n in range(5_000))
    preview = await tools(ws).permission_preview("write_file", {"path": "big.txt", "content": content})
    lines = preview.splitlines()
    assert len(lines) <= 401
    assert "more diff lines" in lines[-1] and "4,6" in lines[-1]


async def test_preview_of_one_giant_line_shows_its_start_clipped(ws: Path) -> None:
    preview = await tools(ws).permission_preview("write_file", {"path": "min.js", "content": "x" * 1_000_000})
    added = [line for line in preview.splitlines() if line.startswith("+x")]
    assert len(added) == 1 and "line clipped: 1,000," in added[0]
    assert len(preview) < 3_000
