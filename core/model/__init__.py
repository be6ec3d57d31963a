"""Model backends behind one small protocol (see base.py)."""

from core.model.base import (
    Model,
    ModelError,
    ModelEvent,
    ModelResponse,
    PromptTooLongError,
)

__all__ = ["Model", "ModelError", "ModelEvent", "ModelResponse", "PromptTooLongError"]
