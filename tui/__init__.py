"""The Textual user interface of ctxtui: chat on the left, context inspector on the right."""
