"""Widgets of the ctxtui app: the chat and its blocks, and the inspector with its gauge and views."""
