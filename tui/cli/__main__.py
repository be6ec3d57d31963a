"""`python -m tui.cli`: the `ctxtui` command."""

from __future__ import annotations

import sys

from tui.cli import main

sys.exit(main())
