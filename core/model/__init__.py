"""Model backends behind one small protocol (see base.py)."""

from core.model.base import (
    Model,
    ModelError,
    ModelEvent,
    ModelResponse,
    PromptTooLongError,
    Retrying,
    TextChunk,
)

__all__ = [
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelResponse",
    "PromptTooLongError",
    "Retrying",
    "TextChunk",
]
