"""Bad input ends in exit 2 with a message naming the file (never a traceback): embeddings, audio listing,
the embedding/attributes/utility commands; and a fuzz of the embedding reader."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vpeval.cli.main import app
from vpeval.errors import InputFileError, VpevalError
from vpeval.io.embeddings import EmbeddingSet, read_embeddings, write_embeddings

runner = CliRunner()


def _set(n_spk=6, dim=8, prefix="s", cond=("original", "anonymized"), seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    spk = np.repeat([f"{prefix}{i}" for i in range(n_spk)], 4)
    utt = np.array([f"{s}-{j}" for s, j in zip(spk, np.tile(range(4), n_spk))])
    x = rng.normal(size=(spk.size, dim))
    emb = np.vstack([x, x + 0.3 * rng.normal(size=x.shape)]) * scale
    return EmbeddingSet(emb, np.r_[utt, utt], np.r_[spk, spk], np.repeat(list(cond), spk.size), "toy")


def _no_traceback(r):
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output


def test_trials_refuses_files_of_different_dimensions_naming_the_file(tmp_path):
    es = _set()
    write_embeddings(tmp_path / "a.npz", es.select(es.condition == "original"))
    other = _set(dim=5)
    write_embeddings(tmp_path / "b.npz", other.select(other.condition == "anonymized"))
    r = runner.invoke(app, ["trials", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "-o", str(tmp_path / "o")])
    _no_traceback(r)
    assert r.exit_code == 2 and "b.npz" in r.output and "dimension 5" in r.output


def test_duplicate_rows_across_embedding_files_name_the_file(tmp_path):
    es = _set()
    write_embeddings(tmp_path / "a.npz", es)
    write_embeddings(tmp_path / "b.npz", es.select(es.condition == "original"))
    r = runner.invoke(app, ["trials", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "-o", str(tmp_path / "o")])
    _no_traceback(r)
    assert r.exit_code == 2 and "b.npz" in r.output and "more than once" in r.output
    assert "<EmbeddingSet>" not in r.output


def test_bad_condition_label_names_the_npz_not_the_extractor(tmp_path):
    write_embeddings(tmp_path / "a.npz", _set(cond=("original", "anon")))
    r = runner.invoke(app, ["trials", str(tmp_path / "a.npz"), "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and "a.npz" in r.output and "'anon'" in r.output and not (tmp_path / "o").exists()
    es = _set()
    write_embeddings(tmp_path / "only.npz", es.select(es.condition == "original"))
    r = runner.invoke(app, ["trials", str(tmp_path / "only.npz"), "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and "only.npz: no embeddings with condition 'anonymized'" in r.output
    (tmp_path / "sys").mkdir()
    write_embeddings(tmp_path / "sys" / "embeddings_toy.npz", _set(cond=("orig", "anonymized")))
    r = runner.invoke(app, ["audit", str(tmp_path / "sys"), "-o", str(tmp_path / "rep"), "-q"])
    assert r.exit_code == 2 and "embeddings_toy.npz" in r.output and "'orig'" in r.output


def test_plain_text_named_npz_and_array_extractor_and_zero_rows(tmp_path):
    (tmp_path / "t.npz").write_text("utterance_id,speaker_id\n")
    with pytest.raises(InputFileError, match=r"t\.npz: not a \.npz archive") as e:
        read_embeddings(tmp_path / "t.npz")
    assert "pickle" not in str(e.value)
    es = _set()
    np.savez(tmp_path / "x.npz", embeddings=es.embeddings, utterance_id=es.utterance_id,
             speaker_id=es.speaker_id, condition=es.condition, extractor=np.array(["a", "b"]))
    with pytest.raises(InputFileError, match=r"x\.npz: extractor must be one non-empty text value"):
        read_embeddings(tmp_path / "x.npz")
    with pytest.raises(VpevalError, match="extractor must be a non-empty name"):
        EmbeddingSet(es.embeddings, es.utterance_id, es.speaker_id, es.condition, np.array(["a", "b"]))
    np.savez(tmp_path / "z.npz", embeddings=np.zeros((0, 4)), utterance_id=np.array([], str),
             speaker_id=np.array([], str), condition=np.array([], str))
    r = runner.invoke(app, ["embedding", str(tmp_path / "z.npz")])
    assert r.exit_code == 2 and "z.npz" in r.output and "(0, 4)" in r.output


def test_embedding_command_on_huge_values_and_negative_seed(tmp_path):
    write_embeddings(tmp_path / "big.npz", _set(n_spk=40, dim=16, scale=1e200), dtype=np.float64)
    write_embeddings(tmp_path / "one.npz", _set(n_spk=40, dim=16), dtype=np.float64)
    import json

    r = runner.invoke(app, ["embedding", str(tmp_path / "big.npz"), "--permutations", "19", "--json"])
    _no_traceback(r)
    assert r.exit_code == 0, r.output
    big = json.loads(r.stdout)
    one = json.loads(runner.invoke(app, ["embedding", str(tmp_path / "one.npz"), "--permutations", "19",
                                         "--json"]).stdout)
    assert big["cca"]["value"] == pytest.approx(one["cca"]["value"], rel=1e-9)
    r = runner.invoke(app, ["embedding", str(tmp_path / "one.npz"), "--seed", "-1"])
    _no_traceback(r)
    assert r.exit_code == 2 and "--seed" in r.output


@pytest.mark.parametrize("c", ["0", "nan", "-1", "inf"])
def test_attributes_c_must_be_positive_and_finite(tmp_path, c):
    es = _set(n_spk=8)
    write_embeddings(tmp_path / "e.npz", es)
    sexes = {f"s{i}": "fm"[i % 2] for i in range(8)}
    (tmp_path / "m.csv").write_text("utterance_id,condition,sex\n" + "".join(
        f"{u},{k},{sexes[s]}\n" for u, s, k in zip(es.utterance_id, es.speaker_id, es.condition)))
    (tmp_path / "tr.txt").write_text("s0\ns1\ns2\ns3\n")
    (tmp_path / "ev.txt").write_text("s4\ns5\ns6\ns7\n")
    r = runner.invoke(app, ["attributes", str(tmp_path / "e.npz"), "--metadata", str(tmp_path / "m.csv"),
                            "--train-speakers", str(tmp_path / "tr.txt"), "--eval-speakers",
                            str(tmp_path / "ev.txt"), "--C", c])
    _no_traceback(r)
    assert r.exit_code == 2 and "C (inverse L2 penalty) must be a positive finite number" in r.output


def test_utility_missing_hypothesis_file_is_named(tmp_path):
    (tmp_path / "ref.txt").write_text("u1 hello\n")
    r = runner.invoke(app, ["utility", "--ref", str(tmp_path / "ref.txt"), "--hyp", str(tmp_path / "nope.txt")])
    _no_traceback(r)
    assert r.exit_code == 2 and "nope.txt" in r.output


def _flac(path):
    sf = pytest.importorskip("soundfile")
    t = np.arange(8000) / 16000
    sf.write(path, 0.2 * np.sin(2 * np.pi * 150 * t), 16000)


def test_audio_listing_follows_symlinked_speaker_folders_and_refuses_dangling_links(tmp_path):
    from vpeval.audio.io import scan_audio_folder

    store, corpus = tmp_path / "store", tmp_path / "corpus"
    (store / "12").mkdir(parents=True)
    (corpus / "11").mkdir(parents=True)
    _flac(corpus / "11" / "11-1-0000.flac")
    _flac(store / "12" / "12-1-0000.flac")
    (corpus / "12").symlink_to(store / "12", target_is_directory=True)
    (corpus / "loop").symlink_to(corpus, target_is_directory=True)  # a link to an ancestor does not loop
    items = scan_audio_folder(corpus)
    assert [it.utterance_id for it in items] == ["11-1-0000", "12-1-0000"]
    (corpus / "13").symlink_to(tmp_path / "gone", target_is_directory=True)
    with pytest.raises(InputFileError, match="13: dangling symbolic link"):
        scan_audio_folder(corpus)
    r = runner.invoke(app, ["embed", str(corpus), "-o", str(tmp_path / "e.npz"), "-q"])
    assert r.exit_code == 2 and "dangling" in r.output and str(corpus / "13") in r.output


# ------------------------------------------------------------------------------------------------ fuzz

arrays = st.sampled_from([
    np.zeros((2, 3)), np.array([[np.nan, 1.0]]), np.array([[np.inf, 0.0]]), np.array(["a", "b"]), np.array(1.0),
    np.array([1, 2]), np.zeros((0, 3)), np.array([[1e308, -1e308]]), np.array([True, False]), np.array(["", "x"]),
    np.array([b"x", b"y"]), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array(["u1", "u1"]), np.array("toy"),
    np.array(["original", "anonymized"]), np.array([1 + 2j, 3j]),
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["embeddings", "utterance_id", "speaker_id", "condition", "extractor",
                                        "other"]), arrays, max_size=6), st.booleans(), st.binary(max_size=64))
def test_fuzzed_npz_files_read_or_fail_with_our_error(tmp_path, content, corrupt, junk):
    """Any .npz (or corrupted bytes) either reads into a valid set or raises InputFileError naming the file."""
    p = tmp_path / "f.npz"
    buf = io.BytesIO()
    np.savez(buf, **content)
    data = buf.getvalue()
    if corrupt:
        data = data[: len(data) // 2] + junk
    p.write_bytes(data)
    try:
        es = read_embeddings(p)
    except InputFileError as exc:
        assert str(exc).startswith(str(p))
        return
    assert es.embeddings.ndim == 2 and es.embeddings.shape[0] == len(es) > 0
    assert np.isfinite(es.embeddings).all() and isinstance(es.extractor, str) and es.extractor
    assert zipfile.is_zipfile(p)
