"""What a model file describes (``ModelFile``), the error of one that cannot be read (``FileFormatError``) and the
most output times a file may ask for (``MAX_SAMPLES``).

Below both readers: ``io`` (TOML files; its ``load`` dispatches to the deck reader) and ``deck`` (KINE2D decks)
build ModelFiles, so that neither imports the other for them.
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..model.planar import Model

MAX_SAMPLES = 10_000_000  # output times a file may ask for: 80 MB of times alone, more than any plot shows


def too_many_samples(samples):
    """Why a file's count of output times is refused (more than ``MAX_SAMPLES``: their arrays would exhaust
    memory before the run starts), or None."""
    if samples <= MAX_SAMPLES:
        return None
    return f"{samples:,.0f} output times, more than {MAX_SAMPLES:,} (each one a sample of the whole state)"


class FileFormatError(ModelError):
    """A model file that cannot be read: the message names the file, the entry and what is expected."""


@dataclass
class ModelFile:
    """What a model file describes: the model, its initial state, drivers and the analysis to run."""

    model: Model
    q0: np.ndarray
    qd0: np.ndarray
    drivers: dict = field(default_factory=dict)
    analysis: dict = field(default_factory=dict)
    source: str = "<string>"
    defaults: list = field(default_factory=list)
    """The defaults the file relied on, as ``"body[0].com = [0.0, 0.0]"`` strings (the format reference)."""

    @property
    def v0(self):
        """The initial velocity coordinates (``qd0``): for a spatial model its v, nv numbers (module docstring)."""
        return self.qd0
