#!/usr/bin/env python
"""Regenerate the bundled example from the LibriSpeech audio, with vpeval's own code.

Usage (from this folder)::

    python make_example.py [DATA_DIR] [--out DIR] [--extractors mfcc,resemblyzer] [--speakers ID,ID,...]

DATA_DIR defaults to ``../../../shared/data/librispeech-mini`` (relative to this folder) and must hold
``speakers.csv`` and the FLAC files (``test-other/<spk>/*.flac``, ``train-clean-100/*.flac``).

Steps (the same library calls as ``vpeval anonymize DATA_DIR ANON --alpha speaker --seed 2024`` and
``vpeval embed ... --extractor X --condition original|anonymized --append``):

1. McAdams anonymization (:func:`vpeval.audio.anonymize.anonymize_folder`) of every utterance, alpha drawn per
   speaker uniformly in [0.5, 0.9) from seed 2024 (:func:`vpeval.audio.anonymize.draw_alpha`, key = speaker id),
   written as 16-bit FLAC to a temporary folder (deleted at the end; no audio is kept);
2. embeddings of the original and the anonymized audio with each extractor
   (:func:`vpeval.audio.embed.embed_folder`), saved as ``embeddings_<extractor>.npz`` (float32, both
   conditions in one file, original rows first, each block sorted by utterance id);
3. ``metadata.csv`` (utterance_id,speaker_id,condition,subset,sex,duration_s,alpha; alpha empty for
   original rows), ``alpha_per_speaker.csv`` and ``provenance.json`` (versions, seed, timings);
4. attacker training speakers (``train/``): 150 of the ``train-clean-100`` speakers (75 F, 75 M, chosen
   among those whose utterance lasts at least ``3 * SEGMENT_S`` seconds, in the order of
   ``sha256("vpeval-train-split:" + speaker id)``) are not part of the evaluation side at all. Their original
   utterance and its anonymized version (same McAdams alpha as every other utterance of the speaker) are both
   cut at the same sample positions into consecutive non-overlapping ``SEGMENT_S``-second segments (the
   remainder is dropped), so each training speaker has >= 3 segments in each condition. Segment ids are
   ``<utterance id>-s<k>`` (k from 00). Embeddings of the segments go to ``train/embeddings_<extractor>.npz``
   with ``train/metadata.csv`` (utterance_id,speaker_id,condition,subset,sex,duration_s,alpha,
   source_utterance,start_s). The other 101 ``train-clean-100`` speakers stay in the main folder as 1-to-N
   distractors / cohort impostors.

5. two more anonymization systems (``--systems``, default both): ``vtln`` (WORLD F0 ratio + bilinear
   spectral-envelope warping, :func:`vpeval.audio.anonymize.vtln`) and ``resample`` (phase vocoder +
   resampling, :func:`vpeval.audio.anonymize.resample_shift`), parameters drawn per speaker from the same
   seed (``anonymize_folder(..., method=..., alpha="speaker", seed=2024)``). Each goes to its own subfolder
   ``<system>/`` laid out like this folder for ``vpeval audit``: ``embeddings_<extractor>.npz`` (the same
   original rows as above, then that system's anonymized rows), ``metadata.csv`` (the parameter columns
   ``warp,f0_ratio`` or ``ratio`` instead of ``alpha``), ``parameters_per_speaker.csv`` and ``train/`` (the
   same training segments, anonymized by that system).

6. a **second run under a pseudo-identity profile key** (``--profile-key``, default ``p2``; empty: none) of every
   system on the evaluation utterances (not the training segments): ``anonymize_folder(..., method=...,
   profile=KEY)``, every speaker's parameters drawn from the key (:func:`vpeval.audio.anonymize.profile_seed`)
   instead of seed 2024, so each speaker gets a second pseudo-voice. Its embeddings are appended to each
   system's ``embeddings_<extractor>.npz`` under the condition ``anonymized@KEY`` and its rows to
   ``metadata.csv`` (parameters filled), so ``vpeval demo``/``audit`` build Beyond-EER's cross-profile trials.
   ``--profile-runs-only`` runs this step alone on an example already in ``--out`` (replacing earlier rows of
   that key).

``--speakers`` restricts everything to some speakers (used by the regeneration test); ``--out`` defaults to
this folder.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
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
#: The further systems and their parameter columns (McAdams, ``alpha``, stays in the main folder).
SYSTEMS = {"vtln": ("warp", "f0_ratio"), "resample": ("ratio",)}
#: Attacker training split: segment length (s) and speakers per sex.
SEGMENT_S = 3.0
TRAIN_PER_SEX = 75

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


def training_speakers(data: Path, speakers: dict) -> set:
    """The attacker-training speakers (module docstring, step 4): a pure function of the audio durations."""
    import hashlib

    import soundfile as sf

    pool: dict[str, list] = {"F": [], "M": []}
    for f in sorted((data / "train-clean-100").rglob("*.flac")):
        spk = f.stem.split("-")[0]
        if sf.info(str(f)).frames >= 3 * int(SEGMENT_S * 16000):
            key = hashlib.sha256(f"vpeval-train-split:{spk}".encode()).hexdigest()
            pool[speakers[spk]["sex"]].append((key, spk))
    chosen = set()
    for sex, cands in pool.items():
        if len(cands) < TRAIN_PER_SEX:
            sys.exit(f"error: only {len(cands)} {sex} train-clean-100 speakers have >= {3 * SEGMENT_S:g} s")
        chosen |= {spk for _, spk in sorted(cands)[:TRAIN_PER_SEX]}
    return chosen


def cut_segments(src: Path, dest: Path) -> list[tuple[str, str, float, float]]:
    """Cut every FLAC file under ``src`` into ``SEGMENT_S``-second segments written to ``dest``.

    Returns ``(segment id, source utterance id, start s, duration s)`` rows.
    """
    from vpeval.audio.io import read_audio, write_audio

    n = int(SEGMENT_S * 16000)
    rows = []
    for f in sorted(src.rglob("*.flac")):
        x = read_audio(f)
        for k in range(x.size // n):
            seg = f"{f.stem}-s{k:02d}"
            write_audio(dest / f"{seg}.flac", x[k * n:(k + 1) * n])
            rows.append((seg, f.stem, k * SEGMENT_S, SEGMENT_S))
    return rows


def write_metadata(path: Path, table, params, speakers: dict, train_spk: set) -> None:
    """metadata.csv of the evaluation utterances of one anonymizer: a row per utterance and condition
    (all original rows, then all anonymized ones, in ``table``'s order), the training speakers left out.
    The anonymizer's per-utterance ``params`` (columns of ``table``) fill the anonymized rows with 6 decimals
    and stay empty on the original ones."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", *params])
        for cond in ("original", "anonymized"):
            for row in table.itertuples():
                if row.speaker_id in train_spk:
                    continue
                sp = speakers[row.speaker_id]
                vals = [f"{getattr(row, p):.6f}" if cond == "anonymized" else "" for p in params]
                w.writerow([row.utterance_id, row.speaker_id, cond, sp["librispeech_subset"], sp["sex"],
                            f"{row.duration_s:.4f}", *vals])


def write_system_tables(out: Path, table, params, speakers: dict, train_spk: set, segments) -> None:
    """metadata.csv, parameters_per_speaker.csv and train/metadata.csv of a further system (step 5)."""
    cols = ["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", *params]
    write_metadata(out / "metadata.csv", table, params, speakers, train_spk)
    per_spk = table.groupby("speaker_id").first()
    with open(out / "parameters_per_speaker.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["speaker_id", "sex", "subset", *params])
        for spk in sorted(per_spk.index):
            w.writerow([spk, speakers[spk]["sex"], speakers[spk]["librispeech_subset"],
                        *[f"{per_spk.loc[spk, p]:.6f}" for p in params]])
    if train_spk:
        with open(out / "train" / "metadata.csv", "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(cols + ["source_utterance", "start_s"])
            for cond in ("original", "anonymized"):
                for seg, src, start, dur in segments:
                    spk = src.split("-")[0]
                    sp = speakers[spk]
                    vals = [f"{per_spk.loc[spk, p]:.6f}" if cond == "anonymized" else "" for p in params]
                    w.writerow([seg, spk, cond, sp["librispeech_subset"], sp["sex"], f"{dur:.4f}", *vals, src,
                                f"{start:.4f}"])


def add_profile_runs(data: Path, out: Path, systems: list, extractors: list, key: str, speakers: dict,
                     quiet: bool) -> dict:
    """Step 6 (module docstring): each system's evaluation utterances anonymized again under profile ``key``,
    embedded, and appended (rows ``anonymized@<key>``) to the system's embedding files and metadata.csv in
    ``out``, replacing earlier rows of that key. Returns the timings (s)."""
    import pandas as pd

    from vpeval.audio.anonymize import anonymize_folder
    from vpeval.audio.embed import embed_folder, get_extractor
    from vpeval.io.embeddings import read_embeddings, write_embeddings

    label = f"anonymized@{key}"
    params = {"mcadams": ["alpha"], **{x: list(SYSTEMS[x]) for x in SYSTEMS}}
    folders = {"mcadams": out, **{x: out / x for x in systems}}
    meta = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    chosen = set(meta["speaker_id"])  # the evaluation side: enrolled speakers and distractors
    timings = {}
    with tempfile.TemporaryDirectory(prefix="vpeval-profile-") as tmp:
        orig = Path(tmp) / "original"
        link_inputs(data, speakers, chosen, orig)
        for x, folder in folders.items():
            anon = Path(tmp) / f"{x}-{key}"
            t = time.perf_counter()
            table = anonymize_folder(orig, anon, method=x, profile=key, quiet=quiet).sort_values("utterance_id")
            timings[f"anonymize_{x}_{key}_s"] = round(time.perf_counter() - t, 2)
            for name in extractors:
                t = time.perf_counter()
                path = folder / FILE_NAMES[name]
                es = read_embeddings(path)
                kept = es.select(es.condition != label)
                run = embed_folder(anon, get_extractor(name), condition=label, quiet=quiet)
                # a file of an earlier vpeval records no extractor or input rates: these rows follow it (one file,
                # one form; the rows are LibriSpeech's 16 kHz as every other)
                if kept.extractor_info is None:
                    run = dataclasses.replace(run, extractor_info=None)
                if kept.input_rate_hz is None:
                    run = dataclasses.replace(run, input_rate_hz=None)
                write_embeddings(path, kept.concat(run))
                timings[f"embed_{name}_{x}_{key}_s"] = round(time.perf_counter() - t, 2)
            m = pd.read_csv(folder / "metadata.csv", dtype=str, keep_default_na=False)
            m = m[m["condition"] != label]
            rows = m[m["condition"] == "original"].copy()
            by_utt = table.set_index("utterance_id")
            rows["condition"] = label
            for p in params[x]:
                rows[p] = [f"{by_utt.loc[u, p]:.6f}" for u in rows["utterance_id"]]
            pd.concat([m, rows]).to_csv(folder / "metadata.csv", index=False, lineterminator="\n")
    return timings


def _profile_provenance(key: str, systems: list, timings: dict, argv) -> dict:
    return {"key": key, "condition": f"anonymized@{key}", "systems": ["mcadams", *systems],
            "method": f"vpeval.audio.anonymize.anonymize_folder(method=..., profile={key!r})",
            "utterances": "evaluation side only (not the training segments)", "timings": timings,
            "command": "python make_example.py " + " ".join(argv if argv is not None else sys.argv[1:])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="librispeech-mini folder")
    ap.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    ap.add_argument("--extractors", default="mfcc,resemblyzer", help="comma-separated: mfcc,resemblyzer")
    ap.add_argument("--speakers", default=None, help="comma-separated speaker ids (default: all)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="further anonymizers, comma-separated: "
                    + ",".join(SYSTEMS) + " (empty: McAdams only)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    ap.add_argument("--profile-key", default="p2", help="key of the second run of every system (step 6; empty: none)")
    ap.add_argument("--profile-runs-only", action="store_true", help="run step 6 alone on the example in --out")
    args = ap.parse_args(argv)

    from vpeval.audio.anonymize import anonymize_folder
    from vpeval.audio.embed import embed_folder, get_extractor
    from vpeval.io.embeddings import write_embeddings

    data, out = Path(args.data), Path(args.out)
    extractors = [e for e in args.extractors.split(",") if e]
    systems = [x for x in args.systems.split(",") if x]
    for x in systems:
        if x not in SYSTEMS:
            sys.exit(f"error: unknown system {x!r}; choose from {', '.join(SYSTEMS)}")
    for e in extractors:
        if e not in FILE_NAMES:
            sys.exit(f"error: unknown extractor {e!r}; choose from {', '.join(FILE_NAMES)}")
    speakers = read_speakers(data)
    chosen = set(args.speakers.split(",")) if args.speakers else None
    if chosen and not chosen <= set(speakers):
        sys.exit(f"error: unknown speaker(s) {sorted(chosen - set(speakers))}")
    if args.profile_runs_only:
        if not args.profile_key:
            sys.exit("error: --profile-runs-only needs a --profile-key")
        timings = add_profile_runs(data, out, systems, extractors, args.profile_key, speakers, args.quiet)
        prov = json.loads((out / "provenance.json").read_text())
        prov["profile_runs"] = _profile_provenance(args.profile_key, systems, timings, argv)
        (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
        print(f"added the runs under profile key {args.profile_key!r} to {out}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    train_spk = training_speakers(data, speakers)
    if chosen is not None:
        train_spk &= chosen
    if train_spk:
        (out / "train").mkdir(exist_ok=True)
    timings = {}
    with tempfile.TemporaryDirectory(prefix="vpeval-example-") as tmp:
        orig, anon = Path(tmp) / "original", Path(tmp) / "anonymized"
        n = link_inputs(data, speakers, chosen, orig)
        t = time.perf_counter()
        table = anonymize_folder(orig, anon, alpha="speaker", seed=SEED, alpha_range=ALPHA_RANGE,
                                 quiet=args.quiet)
        timings["anonymize_s"] = round(time.perf_counter() - t, 2)
        audio_s = float(table["duration_s"].sum())
        tables, anon_dirs = {}, {}
        for x in systems:
            anon_dirs[x] = Path(tmp) / f"anonymized-{x}"
            t = time.perf_counter()
            tables[x] = anonymize_folder(orig, anon_dirs[x], alpha="speaker", seed=SEED, method=x, quiet=args.quiet)
            timings[f"anonymize_{x}_s"] = round(time.perf_counter() - t, 2)
        # the training speakers leave the evaluation folders and are cut into segments
        seg_rows = {}
        for cond, folder in [("original", orig), ("anonymized", anon)] + [(f"anonymized-{x}", anon_dirs[x])
                                                                          for x in systems]:
            tdir = Path(tmp) / f"train-{cond}"
            for f in sorted(folder.rglob("*.flac")):
                if f.stem.split("-")[0] in train_spk:
                    moved = tdir / "whole" / f.name
                    moved.parent.mkdir(parents=True, exist_ok=True)
                    f.rename(moved)
            seg_rows[cond] = cut_segments(tdir / "whole", tdir / "segments") if train_spk else []
        if any(seg_rows["original"] != v for v in seg_rows.values()):
            sys.exit("error: original and anonymized training utterances were cut differently")
        for name in extractors:
            ext = get_extractor(name)
            t = time.perf_counter()
            es_o = embed_folder(orig, ext, condition="original", quiet=args.quiet)
            es = es_o.concat(embed_folder(anon, ext, condition="anonymized", quiet=args.quiet))
            write_embeddings(out / FILE_NAMES[name], es)
            if train_spk:
                tr_o = embed_folder(Path(tmp) / "train-original" / "segments", ext, condition="original",
                                    quiet=args.quiet)
                tr = tr_o.concat(embed_folder(Path(tmp) / "train-anonymized" / "segments", ext,
                                              condition="anonymized", quiet=args.quiet))
                write_embeddings(out / "train" / FILE_NAMES[name], tr)
            timings[f"embed_{name}_s"] = round(time.perf_counter() - t, 2)
            for x in systems:
                t = time.perf_counter()
                (out / x / "train").mkdir(parents=True, exist_ok=True)
                write_embeddings(out / x / FILE_NAMES[name],
                                 es_o.concat(embed_folder(anon_dirs[x], ext, condition="anonymized", quiet=args.quiet)))
                if train_spk:
                    seg = Path(tmp) / f"train-anonymized-{x}" / "segments"
                    write_embeddings(out / x / "train" / FILE_NAMES[name],
                                     tr_o.concat(embed_folder(seg, ext, condition="anonymized", quiet=args.quiet)))
                timings[f"embed_{name}_{x}_s"] = round(time.perf_counter() - t, 2)

    table = table.sort_values("utterance_id")
    if train_spk:
        alpha_of = dict(zip(table["speaker_id"], table["alpha"]))
        with open(out / "train" / "metadata.csv", "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", "alpha",
                        "source_utterance", "start_s"])
            for cond in ("original", "anonymized"):
                for seg, src, start, dur in seg_rows[cond]:
                    sp = speakers[src.split("-")[0]]
                    w.writerow([seg, sp["speaker_id"], cond, sp["librispeech_subset"], sp["sex"], f"{dur:.4f}",
                                f"{alpha_of[sp['speaker_id']]:.6f}" if cond == "anonymized" else "", src,
                                f"{start:.4f}"])
    write_metadata(out / "metadata.csv", table, ["alpha"], speakers, train_spk)
    per_spk = table.groupby("speaker_id")["alpha"].first()
    with open(out / "alpha_per_speaker.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["speaker_id", "sex", "subset", "alpha"])
        for spk in sorted(per_spk.index):
            w.writerow([spk, speakers[spk]["sex"], speakers[spk]["librispeech_subset"], f"{per_spk[spk]:.6f}"])

    for x in systems:
        write_system_tables(out / x, tables[x].sort_values("utterance_id"), SYSTEMS[x], speakers, train_spk,
                            seg_rows["original"])

    versions = {"python": platform.python_version()}
    from importlib import metadata

    for mod, dist in (("vpeval", "vpeval"), ("numpy", "numpy"), ("scipy", "scipy"), ("librosa", "librosa"),
                      ("soundfile", "soundfile"), ("torch", "torch"), ("resemblyzer", "resemblyzer"),
                      ("webrtcvad", "webrtcvad-wheels"), ("pyworld", "pyworld-prebuilt")):
        if mod in sys.modules:
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                versions[dist] = getattr(sys.modules[mod], "__version__", "unknown")
    prov = {
        "source": "LibriSpeech ASR corpus (c) 2014 Vassil Panayotov et al., CC BY 4.0; subset librispeech-mini",
        "utterances": n,
        "speakers": int(table["speaker_id"].nunique()),
        "training_speakers": len(train_spk),
        "training_segments": len(seg_rows["original"]),
        "segment_s": SEGMENT_S,
        "audio_s": round(audio_s, 3),
        "anonymizer": {"method": "McAdams (vpeval.audio.anonymize.mcadams)", "alpha": "per speaker",
                       "alpha_range": list(ALPHA_RANGE), "seed": SEED},
        "systems": {
            "mcadams": "main folder",
            **{x: {"folder": f"{x}/", "method": f"vpeval.audio.anonymize.anonymize_folder(method={x!r})",
                   "parameters": list(SYSTEMS[x]), "drawn": "per speaker", "seed": SEED} for x in systems},
        },
        "extractors": extractors,
        "versions": versions,
        "timings": timings,
        "command": "python make_example.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    if args.profile_key:
        prov["profile_runs"] = _profile_provenance(
            args.profile_key, systems, add_profile_runs(data, out, systems, extractors, args.profile_key, speakers,
                                                        args.quiet), argv)
    (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
    print(f"wrote {', '.join(FILE_NAMES[e] for e in extractors)}, metadata.csv, alpha_per_speaker.csv, "
          f"provenance.json to {out} ({n} utterances, {audio_s:.0f} s of audio)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
