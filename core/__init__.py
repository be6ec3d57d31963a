"""ctxtui core: the agent loop and the compaction pipeline (asyncio only, no Textual)."""

__version__ = "0.1.0"
