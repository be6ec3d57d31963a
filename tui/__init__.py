"""ctxtui TUI: the Textual app that shows and steers the core."""
