"""The `ctxtui` console script: `ctxtui statusline` starts without the CLI's imports, the rest goes to tui.cli.

Claude Code runs the status line every few hundred milliseconds, so it must not pay for argparse,
asyncio and the settings table that `tui.cli` loads (tens of milliseconds) before it reads stdin.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["statusline"]:
        from core.sessions.statusline import main as statusline

        return statusline(sys.argv[2:])
    from tui.cli import main as cli

    return cli()
