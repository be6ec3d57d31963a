"""docs/architecture.md names every package and top-level module of core/ and tui/: a new one that is
not described there fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def named_in_doc() -> set[str]:
    """Every `name/` and `name.py` the document puts in backticks (a path's last part counts too)."""
    found: set[str] = set()
    for cell in re.findall(r"`([^`]+)`", DOC.read_text(encoding="utf-8")):
        for part in cell.replace(",", " ").split():
            if part.endswith("/") or part.endswith(".py"):
                found.add(part.rstrip("/").rsplit("/", 1)[-1])
    return found


def test_every_package_and_module_of_core_and_tui_is_described() -> None:
    named = named_in_doc()
    missing = []
    for top in ("core", "tui"):
        for path in sorted((ROOT / top).iterdir()):
            if path.name.startswith(("_", ".")):
                continue
            if path.is_dir() and (path / "__init__.py").exists() and path.name not in named:
                missing.append(f"{top}/{path.name}/")
            elif path.suffix == ".py" and path.name not in named:
                missing.append(f"{top}/{path.name}")
    assert not missing, f"docs/architecture.md does not describe: {', '.join(missing)}"
