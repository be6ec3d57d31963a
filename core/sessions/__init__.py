"""Sessions on disk: ctxtui's own session logs, and the other history files it can read.

- `log`: the session log (a JSONL record of every change, written as it happens) and its replay.
- `listing`: the sessions of a workdir, and the one `--resume` continues.
- `inspection`: `ctxtui inspect FILE` (any history file: a session, a transcript, a request body,
  a Claude Code session) and its report.
- `claude_code`: reading a Claude Code session file.
"""
