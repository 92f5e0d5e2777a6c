#!/usr/bin/env python
"""Regenerate the bundled example from the LibriSpeech audio, with vpeval's own code.

Usage (from this folder)::

    python make_example.py [DATA_DIR] [--out DIR] [--extractors mfcc,resemblyzer] [--speakers ID,ID,...]

DATA_DIR defaults to ``../../../shared/data/librispeech-mini`` (relative to this folder) and must hold
``speakers.csv`` and the FLAC files (``test-other/<spk>/*.flac``, ``train-clean-100/*.flac``).

Steps (the same library calls as ``vpeval anonymize DATA_DIR ANON --alpha speaker --seed 2024`` and
``vpeval embed ... --extractor X --condition original|anonymized --append``):

1. McAdams anonymization (:func:`vpeval.anonymize.anonymize_folder`) of every utterance, alpha drawn per
   speaker uniformly in [0.5, 0.9) from seed 2024 (:func:`vpeval.anonymize.draw_alpha`, key = speaker id),
   written as 16-bit FLAC to a temporary folder (deleted at the end; no audio is kept);
2. embeddings of the original and the anonymized audio with each extractor
   (:func:`vpeval.embed.embed_folder`), saved as ``embeddings_<extractor>.npz`` (float32, both
   conditions in one file, original rows first, each block sorted by utterance id);
3. ``metadata.csv`` (utterance_id,speaker_id,condition,subset,sex,duration_s,alpha; alpha empty for
   original rows), ``alpha_per_speaker.csv`` and ``provenance.json`` (versions, seed, timings).

``--speakers`` restricts everything to some speakers (used by the regeneration test); ``--out`` defaults to
this folder.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 2024
ALPHA_RANGE = (0.5, 0.9)
DEFAULT_DATA = HERE / ".." / ".." / ".." / "shared" / "data" / "librispeech-mini"
FILE_NAMES = {"mfcc": "embeddings_mfcc.npz", "resemblyzer": "embeddings_resemblyzer.npz"}

try:
    import vpeval  # noqa: F401
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(HERE.parents[1] / "src"))


def read_speakers(data: Path) -> dict[str, dict]:
    path = data / "speakers.csv"
    if not path.is_file():
        sys.exit(f"error: {path} not found; pass the librispeech-mini folder as DATA_DIR")
    with open(path, newline="") as fh:
        return {row["speaker_id"]: row for row in csv.DictReader(fh)}


def link_inputs(data: Path, speakers: dict, chosen: set | None, dest: Path) -> int:
    """Symlink (or copy) the selected speakers' FLAC files into ``dest`` keeping subset folders."""
    import shutil

    n = 0
    for sub in ("test-other", "train-clean-100"):
        for f in sorted((data / sub).rglob("*.flac")):
            spk = f.stem.split("-")[0]
            if spk not in speakers:
                sys.exit(f"error: {f}: speaker {spk} is not in speakers.csv")
            if chosen is not None and spk not in chosen:
                continue
            target = dest / sub / f.name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                target.symlink_to(f.resolve())
            except OSError:
                shutil.copy2(f, target)
            n += 1
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="librispeech-mini folder")
    ap.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    ap.add_argument("--extractors", default="mfcc,resemblyzer", help="comma-separated: mfcc,resemblyzer")
    ap.add_argument("--speakers", default=None, help="comma-separated speaker ids (default: all)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)

    from vpeval.anonymize import anonymize_folder
    from vpeval.embed import embed_folder, get_extractor
    from vpeval.io.embeddings import write_embeddings

    data, out = Path(args.data), Path(args.out)
    extractors = [e for e in args.extractors.split(",") if e]
    for e in extractors:
        if e not in FILE_NAMES:
            sys.exit(f"error: unknown extractor {e!r}; choose from {', '.join(FILE_NAMES)}")
    speakers = read_speakers(data)
    chosen = set(args.speakers.split(",")) if args.speakers else None
    if chosen and not chosen <= set(speakers):
        sys.exit(f"error: unknown speaker(s) {sorted(chosen - set(speakers))}")
    out.mkdir(parents=True, exist_ok=True)
    timings = {}
    with tempfile.TemporaryDirectory(prefix="vpeval-example-") as tmp:
        orig, anon = Path(tmp) / "original", Path(tmp) / "anonymized"
        n = link_inputs(data, speakers, chosen, orig)
        t = time.perf_counter()
        table = anonymize_folder(orig, anon, alpha="speaker", seed=SEED, alpha_range=ALPHA_RANGE,
                                 quiet=args.quiet)
        timings["anonymize_s"] = round(time.perf_counter() - t, 2)
        audio_s = float(table["duration_s"].sum())
        for name in extractors:
            ext = get_extractor(name)
            t = time.perf_counter()
            es = embed_folder(orig, ext, condition="original", quiet=args.quiet)
            es = es.concat(embed_folder(anon, ext, condition="anonymized", quiet=args.quiet))
            timings[f"embed_{name}_s"] = round(time.perf_counter() - t, 2)
            write_embeddings(out / FILE_NAMES[name], es)

    table = table.sort_values("utterance_id")
    with open(out / "metadata.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", "alpha"])
        for cond in ("original", "anonymized"):
            for row in table.itertuples():
                sp = speakers[row.speaker_id]
                w.writerow([row.utterance_id, row.speaker_id, cond, sp["librispeech_subset"], sp["sex"],
                            f"{row.duration_s:.4f}", f"{row.alpha:.6f}" if cond == "anonymized" else ""])
    per_spk = table.groupby("speaker_id")["alpha"].first()
    with open(out / "alpha_per_speaker.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["speaker_id", "sex", "subset", "alpha"])
        for spk in sorted(per_spk.index):
            w.writerow([spk, speakers[spk]["sex"], speakers[spk]["librispeech_subset"], f"{per_spk[spk]:.6f}"])

    versions = {"python": platform.python_version()}
    from importlib import metadata

    for mod, dist in (("vpeval", "vpeval"), ("numpy", "numpy"), ("scipy", "scipy"), ("librosa", "librosa"),
                      ("soundfile", "soundfile"), ("torch", "torch"), ("resemblyzer", "resemblyzer"),
                      ("webrtcvad", "webrtcvad-wheels")):
        if mod in sys.modules:
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                versions[dist] = getattr(sys.modules[mod], "__version__", "unknown")
    prov = {
        "source": "LibriSpeech ASR corpus (c) 2014 Vassil Panayotov et al., CC BY 4.0; subset librispeech-mini",
        "utterances": n,
        "speakers": int(table["speaker_id"].nunique()),
        "audio_s": round(audio_s, 3),
        "anonymizer": {"method": "McAdams (vpeval.anonymize.mcadams)", "alpha": "per speaker",
                       "alpha_range": list(ALPHA_RANGE), "seed": SEED},
        "extractors": extractors,
        "versions": versions,
        "timings": timings,
        "command": "python make_example.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
    print(f"wrote {', '.join(FILE_NAMES[e] for e in extractors)}, metadata.csv, alpha_per_speaker.csv, "
          f"provenance.json to {out} ({n} utterances, {audio_s:.0f} s of audio)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
