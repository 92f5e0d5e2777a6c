#!/usr/bin/env python
"""How well each speaker extractor separates clean speakers: ROCCH-EER of cosine scoring, and embedding speed.

Usage::

    python benchmarks/extractor_eer.py [DATA_DIR] [--per-speaker 6] [--extractors mfcc,voicefilter-dvector]

Takes the first ``--per-speaker`` utterances (sorted by name) of every speaker folder of ``DATA_DIR/test-other``
(default ``../shared/data/librispeech-mini`` beside the repository: 10 LibriSpeech test-other speakers), embeds
each with each extractor, and scores every unordered pair of utterances by the cosine of their embeddings:
same-speaker pairs are targets, the others non-targets. Printed per extractor: the ROCCH-EER (a quick sanity figure
on a few hundred pairs, without an interval: not an evaluation), the mean target and non-target cosine, and the real-time factor (seconds of audio per second of embedding, file reading excluded). The
1-minute load average before and after is printed beside it; other processes change the speed a lot.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    from vpeval import rocch_eer
    from vpeval.audio.embed import get_extractor
    from vpeval.audio.io import read_audio

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=str(ROOT.parent / "shared" / "data" / "librispeech-mini"))
    ap.add_argument("--per-speaker", type=int, default=6)
    ap.add_argument("--extractors", default="mfcc,voicefilter-dvector,resemblyzer")
    a = ap.parse_args()
    root = Path(a.data) / "test-other"
    files = [f for d in sorted(p for p in root.iterdir() if p.is_dir())
             for f in sorted(d.rglob("*.flac"))[:a.per_speaker]]
    spk = np.array([f.stem.split("-")[0] for f in files])
    audio = [read_audio(f) for f in files]
    seconds = sum(x.size for x in audio) / 16000
    print(f"{len(files)} utterances of {len(set(spk))} speakers ({seconds:.0f} s) from {root}")
    iu = np.triu_indices(len(files), 1)
    same = (spk[:, None] == spk[None, :])[iu]
    for name in a.extractors.split(","):
        try:
            ext = get_extractor(name)
        except ImportError as exc:
            print(f"{name}: not installed ({str(exc).splitlines()[0]})")
            continue
        ext.embed(audio[0])  # warm-up
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        E = np.array([ext.embed(x) for x in audio])
        dt = time.perf_counter() - t0
        load1 = os.getloadavg()[0]
        En = E / np.linalg.norm(E, axis=1, keepdims=True)
        S = (En @ En.T)[iu]
        tar, non = S[same], S[~same]
        print(f"{ext.name:22s} ROCCH-EER {100 * rocch_eer(tar, non):5.2f} %  mean cosine target {tar.mean():.3f} "
              f"non-target {non.mean():.3f}  {seconds / dt:5.1f}x real time  load {load0:.1f} -> {load1:.1f}")


if __name__ == "__main__":
    main()
