"""Recognition by content: each real trajectory is claimed by its own reader and by no other, and
none of the project's own history files (a Messages API history, a request body, a ctxtui session,
a proxy recording, a Claude Code session) is taken for a trajectory."""

from __future__ import annotations

from pathlib import Path

from core.trajectories import READERS, atif, codex, openhands, parse_file, read_trajectory, swe_agent
from tests.core.trajectories.trajectory_files import other_histories, real, write

REAL = {
    atif: [("atif", "openhands_hello-world.trajectory.json"),
           ("atif", "terminus_2_hello-world-context-summarization.trajectory.json")],
    codex: [("codex", "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz")],
    openhands: [("openhands", "multi_swe_bench_output.first-line.jsonl.gz"),
                ("openhands", "basic_gui_mode.json")],
}
MINI_SWE_AGENT = {
    "trajectory_format": "mini-swe-agent-1.1",
    "info": {"config": {"model": {"model_name": "deepseek/deepseek-chat"}}},
    "messages": [{"role": "system", "content": "You are a helpful assistant."},
                 {"role": "user", "content": "Fix the bug."},
                 {"role": "assistant", "content": "```bash\nls\n```"},
                 {"role": "user", "content": "<returncode>0</returncode>"}],
}


def test_each_real_trajectory_is_claimed_by_its_reader_only(tmp_path: Path) -> None:
    assert set(READERS) == {atif, codex, openhands, swe_agent}
    files = [(reader, real(tmp_path, kind, name)) for reader, names in REAL.items() for kind, name in names]
    files.append((swe_agent, write(tmp_path / "run.traj.json", MINI_SWE_AGENT)))
    for owner, path in files:
        data = parse_file(path)
        assert [reader for reader in READERS if reader.looks_like(data)] == [owner], path.name
        trajectory = read_trajectory(path, data)
        assert trajectory is not None and trajectory.calls > 0


def test_the_projects_own_history_files_are_not_trajectories(tmp_path: Path) -> None:
    for name, path in other_histories(tmp_path).items():
        data = parse_file(path)
        assert data is not None, name
        assert [reader.__name__ for reader in READERS if reader.looks_like(data)] == [], name
        assert read_trajectory(path) is None, name
