"""Widgets of the ctxtui app: chat blocks, the context gauge and the message tree."""
