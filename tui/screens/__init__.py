"""Screens: the main screen (chat and inspector), the parts it holds (steering, the archive opener), and its
dialogs (permission, archive viewer and list, compact focus, summary review, preview, sessions, oversize)."""

from pathlib import Path

DIALOG_CSS = str(Path(__file__).with_name("dialogs.tcss"))
"""The dialogs' rules: each ModalScreen here sets `CSS_PATH = DIALOG_CSS`, so Textual reads the file
when the first dialog opens (once), not before the first frame."""
