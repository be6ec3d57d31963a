"""Screens: the main screen (chat and inspector), the parts it holds (steering, the archive opener), and its
dialogs (permission, archive viewer and list, compact focus, summary review, preview, sessions, oversize)."""
