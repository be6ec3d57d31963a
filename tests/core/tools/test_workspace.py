"""The reach of the tools: every path stays inside the workspace (escapes, symlinks, a directory
swapped while the tools run), special files are refused without blocking, and ctxtui's own state
and git's config are never written."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tools import ToolOutput, Workspace, WorkspaceError
from tests.support.tools import make_tools

# -- resolving paths -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x", "..", "", "   ", "a\x00b"])
def test_resolve_refuses_escapes_and_bad_paths(ws: Path, path: str) -> None:
    with pytest.raises(WorkspaceError) as info:
        Workspace(ws).resolve(path)
    assert "\n" not in str(info.value) and str(info.value)


def test_resolve_refuses_dotdot_that_leaves_and_re_enters_the_root(ws: Path) -> None:
    with pytest.raises(WorkspaceError):
        Workspace(ws).resolve(f"../{ws.name}/file.txt")


def test_resolve_accepts_paths_that_stay_inside(ws: Path) -> None:
    workspace = Workspace(ws)
    assert workspace.resolve("a/../b.txt") == ws.resolve() / "b.txt"
    assert workspace.resolve("./sub/file.txt") == ws.resolve() / "sub" / "file.txt"
    assert workspace.relative(workspace.resolve("sub/deeper/f.py")) == "sub/deeper/f.py"
    assert workspace.relative(workspace.root) == "."


segment = st.sampled_from(["..", ".", "a", "b", "up", "out", "loop", ""])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(segment, min_size=1, max_size=6))
def test_resolve_never_returns_a_path_outside_the_root(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    base = tmp_path_factory.getbasetemp() / "prop"
    root = base / "ws"
    if not root.exists():
        (root / "a" / "b").mkdir(parents=True)
        (base / "elsewhere").mkdir()
        (root / "up").symlink_to("..")
        (root / "a" / "out").symlink_to(base / "elsewhere")
        (root / "loop").symlink_to("loop")
    workspace = Workspace(root)
    try:
        resolved = workspace.resolve("/".join(parts))
    except WorkspaceError:
        return
    assert resolved.is_relative_to(workspace.root)


# -- escapes and symlinks --------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x"])
async def test_file_tools_refuse_escapes(ws: Path, path: str) -> None:
    tools = make_tools(ws)
    for name, tool_input in [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("edit_file", {"path": path, "old_text": "root", "new_text": "pwned"}),
    ]:
        result = await tools.run(name, tool_input)
        assert result.is_error, (name, result)
        assert "outside the workspace" in result.content or "Absolute path" in result.content
    assert not (ws.parent / "x").exists()


async def test_symlink_to_outside_file_is_refused_for_read_and_write(ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    tools = make_tools(ws)

    read = await tools.run("read_file", {"path": "link.txt"})
    assert read.is_error and "symlink" in read.content
    assert "TOP SECRET" not in read.content

    write = await tools.run("write_file", {"path": "link.txt", "content": "overwritten"})
    assert write.is_error and "symlink" in write.content

    edit = await tools.run("edit_file", {"path": "link.txt", "old_text": "TOP", "new_text": "NO"})
    assert edit.is_error
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert (ws / "link.txt").is_symlink()


async def test_symlinked_directory_and_dangling_link_to_outside_are_refused(ws: Path, outside: Path) -> None:
    (ws / "linkdir").symlink_to(outside)
    (ws / "dangling").symlink_to(outside / "not-yet-there.txt")
    tools = make_tools(ws)

    for path in ["linkdir/new.txt", "linkdir/secret.txt", "linkdir/../outside/x.txt", "dangling"]:
        result = await tools.run("write_file", {"path": path, "content": "x"})
        assert result.is_error, path
    assert os.listdir(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_symlink_inside_the_workspace_is_allowed(ws: Path) -> None:
    (ws / "real.txt").write_text("inside\n")
    (ws / "alias.txt").symlink_to("real.txt")
    tools = make_tools(ws)
    result = await tools.run("read_file", {"path": "alias.txt"})
    assert result == ToolOutput("inside\n")


# -- a directory swapped for a symlink while the tools run -----------------------------------------


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A directory outside the workspace with a file of the same name as one inside, and one of its own."""
    directory = tmp_path / "elsewhere"
    directory.mkdir()
    (directory / "f.txt").write_text("SECRET\n")
    (directory / "only_outside.txt").write_text("SECRET\n")
    return directory


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


async def test_no_read_or_write_lands_outside_while_a_directory_is_swapped(ws: Path, elsewhere: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    box = make_tools(ws)
    outcomes: set[str] = set()
    with Swapper(ws, elsewhere) as swapper:
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
    assert sorted(os.listdir(elsewhere)) == ["f.txt", "only_outside.txt"]
    assert (elsewhere / "f.txt").read_text() == "SECRET\n"
    assert "read ok" in outcomes and "write ok" in outcomes  # the tools kept working meanwhile


@pytest.mark.timeout(30)
async def test_special_files_are_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    box = make_tools(ws)
    for name, tool_input in [
        ("read_file", {"path": "pipe"}),
        ("edit_file", {"path": "pipe", "old_text": "a", "new_text": "b"}),
        ("write_file", {"path": "pipe", "content": "x"}),
    ]:
        result = await box.run(name, tool_input)
        assert result.is_error and "FIFO" in result.content, (name, result)
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


# -- ctxtui's own state and git's config -----------------------------------------------------------


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
    box = make_tools(ws)
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
    """Config and hooks were refused, but any other file under `.git` (commondir, info,
    objects) or a `.git` file pointing elsewhere made the next `git status` run a command."""
    (ws / ".git" / "info").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "vendor" / "lib" / ".git").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "git-alias").symlink_to(".git")
    before = contents(ws)
    box = make_tools(ws)
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
    result = await make_tools(ws).run("write_file", {"path": path, "content": "fine\n"})
    assert not result.is_error, result
    assert (ws / path).read_text() == "fine\n"


async def test_the_archive_stays_readable(ws: Path) -> None:
    (ws / ".task_outputs/tool-results").mkdir(parents=True)
    (ws / ".task_outputs/tool-results/toolu_1.txt").write_text("archived\n")
    box = make_tools(ws)
    assert await box.run("read_file", {"path": ".task_outputs/tool-results/toolu_1.txt"}) == ToolOutput("archived\n")
    assert not (await box.run("write_file", {"path": "git/config", "content": "fine"})).is_error
