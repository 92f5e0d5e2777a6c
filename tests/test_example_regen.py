"""The bundled example examples/librispeech-mini: consistency, and regeneration from the audio.

Regeneration tolerance (stated in the example's README): embeddings are stored as float32, and the
anonymized audio is re-read from 16-bit FLAC, so a different BLAS/librosa build could move a value by a
few float32 ulps or flip one PCM rounding; the regenerated rows must match the committed ones within
``rtol=1e-4, atol=1e-3`` (MFCC statistics are in dB-like units of size 1-500; resemblyzer entries are in
[0, 1]); metadata and alphas must match exactly (they are written with fixed decimals).
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from vpeval.audio.anonymize import draw_alpha
from conftest import SHARED
from vpeval.io.embeddings import read_embeddings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "librispeech-mini"
DATA = SHARED / "data" / "librispeech-mini"
RTOL, ATOL = 1e-4, 1e-3


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


P2 = "anonymized@p2"  # the second run of every system, under profile key p2 (make_example.py, step 6)


def test_committed_example_is_consistent():
    from vpeval.audio.anonymize import ALPHA_RANGE, profile_seed

    meta = read_csv(EXAMPLE / "metadata.csv")
    assert list(meta[0]) == ["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", "alpha"]
    assert len(meta) == 3 * 201
    assert [r["utterance_id"] for r in meta if r["condition"] == P2] == [
        r["utterance_id"] for r in meta if r["condition"] == "original"]
    alphas = {r["speaker_id"]: r for r in read_csv(EXAMPLE / "alpha_per_speaker.csv")}
    assert len(alphas) == 261
    for spk, r in alphas.items():
        assert r["alpha"] == f"{draw_alpha(2024, spk):.6f}"
        assert r["sex"] in ("F", "M")
    for r in meta:
        want = {"anonymized": alphas[r["speaker_id"]]["alpha"], "original": "",
                P2: f"{draw_alpha(profile_seed('p2'), r['speaker_id'], *ALPHA_RANGE):.6f}"}[r["condition"]]
        assert r["alpha"] == want
        assert r["subset"] == alphas[r["speaker_id"]]["subset"]
    subsets = {r["subset"] for r in meta}
    assert subsets == {"test-other", "train-clean-100"}
    total = 0
    for name, dim in (("embeddings_mfcc.npz", 40), ("embeddings_resemblyzer.npz", 256)):
        path = EXAMPLE / name
        total += path.stat().st_size
        es = read_embeddings(path)
        assert es.embeddings.shape == (603, dim)
        with np.load(path) as z:
            assert z["embeddings"].dtype == np.float32
        assert list(es.utterance_id) == [r["utterance_id"] for r in meta]
        assert list(es.condition) == [r["condition"] for r in meta]
        assert list(es.speaker_id) == [r["speaker_id"] for r in meta]
    assert total < 2_600_000


def test_committed_training_speakers():
    meta = read_csv(EXAMPLE / "train" / "metadata.csv")
    assert list(meta[0]) == ["utterance_id", "speaker_id", "condition", "subset", "sex", "duration_s", "alpha",
                             "source_utterance", "start_s"]
    alphas = {r["speaker_id"]: r for r in read_csv(EXAMPLE / "alpha_per_speaker.csv")}
    speakers = {r["speaker_id"] for r in meta}
    assert len(speakers) == 150
    assert sorted(alphas[s]["sex"] for s in speakers).count("F") == 75
    eval_speakers = {r["speaker_id"] for r in read_csv(EXAMPLE / "metadata.csv")}
    assert not speakers & eval_speakers and len(speakers | eval_speakers) == 261
    for cond in ("original", "anonymized"):
        rows = [r for r in meta if r["condition"] == cond]
        per = {}
        for r in rows:
            per[r["speaker_id"]] = per.get(r["speaker_id"], 0) + 1
            assert r["utterance_id"] == f"{r['source_utterance']}-s{round(float(r['start_s']) / 3):02d}"
            assert r["duration_s"] == "3.0000" and r["subset"] == "train-clean-100"
            assert r["alpha"] == (alphas[r["speaker_id"]]["alpha"] if cond == "anonymized" else "")
        assert min(per.values()) >= 3
    total = 0
    for name, dim in (("embeddings_mfcc.npz", 40), ("embeddings_resemblyzer.npz", 256)):
        es = read_embeddings(EXAMPLE / "train" / name)
        total += (EXAMPLE / "train" / name).stat().st_size
        assert es.embeddings.shape == (len(meta), dim)
        assert list(es.utterance_id) == [r["utterance_id"] for r in meta]
        assert list(es.condition) == [r["condition"] for r in meta]
    assert total < 1_500_000


SYSTEM_PARAMS = {"vtln": ["warp", "f0_ratio"], "resample": ["ratio"]}


@pytest.mark.parametrize("system", sorted(SYSTEM_PARAMS))
def test_committed_further_systems(system):
    """vtln/ and resample/: the same evaluation and training rows as McAdams, their own anonymized rows and
    parameters (drawn per speaker from seed 2024)."""
    from vpeval.audio.anonymize.folder import _world_parameters

    d = EXAMPLE / system
    params = SYSTEM_PARAMS[system]
    per = {r["speaker_id"]: r for r in read_csv(d / "parameters_per_speaker.csv")}
    assert len(per) == 261
    for spk, r in per.items():
        want = _world_parameters(system, 2024, spk)
        assert [r[p] for p in params] == [f"{want[p]:.6f}" for p in params]
    main_meta = read_csv(EXAMPLE / "metadata.csv")
    for sub in ("", "train/"):
        meta = read_csv(d / f"{sub}metadata.csv")
        ref = read_csv(EXAMPLE / f"{sub}metadata.csv")
        drop = lambda r: {k: v for k, v in r.items() if k not in params and k != "alpha"}  # noqa: E731
        assert [drop(r) for r in meta] == [drop(r) for r in ref]
        for r in meta:
            if r["condition"] == P2:  # drawn from the profile key instead of the seed
                from vpeval.audio.anonymize import profile_seed

                want = _world_parameters(system, profile_seed("p2"), r["speaker_id"])
                assert [r[p] for p in params] == [f"{want[p]:.6f}" for p in params]
                continue
            assert [r[p] for p in params] == ([per[r["speaker_id"]][p] for p in params]
                                              if r["condition"] == "anonymized" else [""] * len(params))
        for name in ("embeddings_mfcc.npz", "embeddings_resemblyzer.npz"):
            es, base = read_embeddings(d / sub / name), read_embeddings(EXAMPLE / sub / name)
            assert list(es.utterance_id) == [r["utterance_id"] for r in meta]
            assert list(es.condition) == [r["condition"] for r in meta]
            o = es.condition == "original"
            np.testing.assert_array_equal(es.embeddings[o], base.embeddings[base.condition == "original"])
            # its anonymized rows are not McAdams's, in either run
            for c in ("anonymized", P2) if not sub else ("anonymized",):  # the second run: evaluation side only
                assert np.max(np.abs(es.embeddings[es.condition == c] - base.embeddings[base.condition == c])) > 1e-2
    assert len(main_meta) == 603


def _load_script():
    spec = importlib.util.spec_from_file_location("make_example", EXAMPLE / "make_example.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_regenerating_two_speakers_reproduces_committed_rows(tmp_path):
    if not (DATA / "speakers.csv").is_file():
        pytest.skip("../shared/data/librispeech-mini is absent")
    mod = _load_script()
    # one enrolled speaker (10 utterances), one distractor and one training speaker, MFCC only for time
    assert mod.main([str(DATA), "--out", str(tmp_path), "--speakers", "1688,1034,103", "--extractors", "mfcc",
                     "--quiet"]) == 0
    new_meta = read_csv(tmp_path / "metadata.csv")
    old_meta = [r for r in read_csv(EXAMPLE / "metadata.csv") if r["speaker_id"] in ("1688", "1034", "103")]
    assert len(new_meta) == 33
    key = lambda r: (r["condition"], r["utterance_id"])  # noqa: E731
    assert sorted(new_meta, key=key) == sorted(old_meta, key=key)
    new_alpha = read_csv(tmp_path / "alpha_per_speaker.csv")
    old_alpha = [r for r in read_csv(EXAMPLE / "alpha_per_speaker.csv")
                 if r["speaker_id"] in ("1688", "1034", "103")]
    assert new_alpha == old_alpha

    new, old = read_embeddings(tmp_path / "embeddings_mfcc.npz"), read_embeddings(EXAMPLE / "embeddings_mfcc.npz")
    index = {(u, c): i for i, (u, c) in enumerate(zip(old.utterance_id, old.condition))}
    rows = [index[(u, c)] for u, c in zip(new.utterance_id, new.condition)]
    assert new.extractor == old.extractor == "mfcc-stats"
    np.testing.assert_array_equal(new.speaker_id, old.speaker_id[rows])
    np.testing.assert_allclose(new.embeddings, old.embeddings[rows], rtol=RTOL, atol=ATOL)
    # the anonymized rows really differ from the original ones (the check above is not vacuous)
    orig = new.embeddings[new.condition == "original"]
    anon = new.embeddings[new.condition == "anonymized"]
    assert np.max(np.abs(orig - anon)) > 100 * ATOL
    # the run under profile key p2 is another pseudo-voice of the same utterances
    assert np.max(np.abs(new.embeddings[new.condition == P2] - anon)) > 100 * ATOL

    # the training speaker's segments, cut from the same audio, match the committed ones
    new_tr = read_embeddings(tmp_path / "train" / "embeddings_mfcc.npz")
    old_tr = read_embeddings(EXAMPLE / "train" / "embeddings_mfcc.npz")
    assert set(new_tr.speaker_id) == {"103"} and len(new_tr) == 8
    index = {(u, c): i for i, (u, c) in enumerate(zip(old_tr.utterance_id, old_tr.condition))}
    rows = [index[(u, c)] for u, c in zip(new_tr.utterance_id, new_tr.condition)]
    np.testing.assert_allclose(new_tr.embeddings, old_tr.embeddings[rows], rtol=RTOL, atol=ATOL)
    assert read_csv(tmp_path / "train" / "metadata.csv") == [
        r for r in read_csv(EXAMPLE / "train" / "metadata.csv") if r["speaker_id"] == "103"]

    # the further systems' subfolders
    for system in SYSTEM_PARAMS:
        for sub in ("", "train/"):
            new = read_embeddings(tmp_path / system / sub / "embeddings_mfcc.npz")
            old = read_embeddings(EXAMPLE / system / sub / "embeddings_mfcc.npz")
            index = {(u, c): i for i, (u, c) in enumerate(zip(old.utterance_id, old.condition))}
            rows = [index[(u, c)] for u, c in zip(new.utterance_id, new.condition)]
            np.testing.assert_allclose(new.embeddings, old.embeddings[rows], rtol=RTOL, atol=ATOL)
            keep = {"1688", "1034", "103"}
            assert read_csv(tmp_path / system / sub / "metadata.csv") == [
                r for r in read_csv(EXAMPLE / system / sub / "metadata.csv") if r["speaker_id"] in keep]
        assert read_csv(tmp_path / system / "parameters_per_speaker.csv") == [
            r for r in read_csv(EXAMPLE / system / "parameters_per_speaker.csv") if r["speaker_id"] in keep]
