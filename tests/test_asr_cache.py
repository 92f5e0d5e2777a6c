"""The per-utterance transcript cache (vpeval.audio.asr.cache)."""

from __future__ import annotations

import numpy as np

from vpeval.audio.asr.base import ASRBackend
from vpeval.audio.asr.cache import CachedTranscriber, waveform_key


class Counting(ASRBackend):
    name = "counting"

    def __init__(self, beam=1):
        self.calls = 0
        self.beam = beam

    def settings(self):
        return {"beam_size": self.beam, "model_dir": "/somewhere", "cpu_threads": 3}

    def _transcribe(self, x):
        self.calls += 1
        return f"len {x.size} sum {x.sum():.3f}"


def test_each_waveform_is_recognised_once_and_read_back(tmp_path):
    x, y = np.linspace(-0.5, 0.5, 1600), np.linspace(0.5, -0.5, 1600)
    b = Counting()
    c = CachedTranscriber(b, tmp_path)
    first = [c.transcribe(x, utterance_id="a"), c.transcribe(y), c.transcribe(x.copy())]
    assert b.calls == 2 and (c.hits, c.misses) == (1, 2) and first[0] == first[2]
    b2 = Counting()
    c2 = CachedTranscriber(b2, tmp_path)  # a new process: read from disk
    assert [c2.transcribe(x), c2.transcribe(y)] == first[:2] and b2.calls == 0


def test_other_settings_other_file_but_not_threads_or_path(tmp_path):
    a = CachedTranscriber(Counting(beam=1), tmp_path).path
    assert CachedTranscriber(Counting(beam=5), tmp_path).path != a
    other = Counting(beam=1)
    other.settings = lambda: {"beam_size": 1, "model_dir": "/elsewhere", "cpu_threads": 1}
    assert CachedTranscriber(other, tmp_path).path == a


def test_a_cut_line_is_ignored(tmp_path):
    x = np.linspace(-0.5, 0.5, 1600)
    c = CachedTranscriber(Counting(), tmp_path)
    c.transcribe(x)
    with open(c.path, "a") as fh:
        fh.write('{"sha256": "ab')
    b = Counting()
    assert CachedTranscriber(b, tmp_path).transcribe(x) and b.calls == 0


def test_key_is_of_the_samples():
    x = np.linspace(-0.5, 0.5, 100)
    assert waveform_key(x) == waveform_key(x.astype(np.float32))
    assert waveform_key(x) != waveform_key(x[::-1])
