"""Optional inputs of an audit's system folder beside its embeddings: the extractor-adapted attacker's cached
GE2E states (``ge2e_states.npz``) and the content/prosody channels (``channels/``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["add_channels", "load_adapt"]


def load_adapt(folder: Path, files: list):
    """The extractor-adapted attacker's inputs of a system folder (``ge2e_states.npz``, see
    :func:`vpeval.pipeline.adapted.read_adapt_folder`), or None; their files are added to ``files``."""
    from ..pipeline.adapted import PROJECTION_FILE, STATES_FILE, read_adapt_folder

    got = read_adapt_folder(folder)
    if got is not None:
        files += [folder / STATES_FILE, folder / "train" / STATES_FILE,
                  next(p for p in (folder / PROJECTION_FILE, folder.parent / PROJECTION_FILE) if p.is_file())]
    return got


def add_channels(folder: Path, name: str, sets: dict, train: dict) -> list:
    """Add the system's content/prosody channels (``channels/``, :mod:`vpeval.cli.channels`) to its sets."""
    from .channels import load_channels

    spk = {u: s for es in list(sets.values()) + list(train.values())
           for u, s in zip(es.utterance_id.tolist(), es.speaker_id.tolist())}
    csets, ctrain, used = load_channels(folder, name, sets, lambda u: spk.get(u) or u.split("-")[0])
    sets.update(csets)
    train.update(ctrain)
    return used
