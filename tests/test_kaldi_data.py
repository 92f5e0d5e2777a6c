"""Kaldi data folders: reader, writer, CLI input/output (anonymize -> embed on a data folder)."""

import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpeval.errors import InputFileError, VpevalError
from vpeval.audio.io import scan_audio_folder, write_audio
from vpeval.io.kaldi_data import (
    is_kaldi_data_folder, kaldi_metadata_table, read_kaldi_data_folder, write_kaldi_data_folder,
)


def _tone(f0=150.0, seconds=0.5):
    t = np.arange(int(16000 * seconds)) / 16000
    return 0.3 * np.sin(2 * np.pi * f0 * t)


def _folder(tmp_path, **files):
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


@pytest.fixture
def audio(tmp_path):
    a = tmp_path / "audio"
    for u in ("a1", "a2", "b1"):
        write_audio(a / f"{u}.wav", _tone())
    return a


def test_reads_paths_speakers_sex_and_text(tmp_path, audio):
    d = _folder(tmp_path, **{
        "wav.scp": f"a1 ../audio/a1.wav\na2 {audio / 'a2.wav'}\nb1 ../audio/b1.wav\n",
        "utt2spk": "a1 A\na2 A\nb1 B\n",
        "spk2utt": "A a1 a2\nB b1\n",
        "spk2gender": "A f\nB m\n",
        "text": "a1 HELLO   WORLD\na2 x\nb1\n",
    })
    assert is_kaldi_data_folder(d) and not is_kaldi_data_folder(audio)
    k = read_kaldi_data_folder(d)
    assert list(k.wav) == ["a1", "a2", "b1"]
    assert k.wav["a1"].resolve() == (audio / "a1.wav").resolve() and k.wav["a2"] == audio / "a2.wav"
    assert k.utt2spk == {"a1": "A", "a2": "A", "b1": "B"}
    assert k.sex == {"A": "F", "B": "M"} and k.speaker_sex() == {"a1": "F", "a2": "F", "b1": "M"}
    assert k.text == {"a1": "HELLO WORLD", "a2": "x", "b1": ""}
    assert k.wav_line == {"a1": 1, "a2": 2, "b1": 3}
    items = scan_audio_folder(d)
    assert [(i.utterance_id, i.speaker_id, i.relative_path.as_posix()) for i in items] == [
        ("a1", "A", "wav/a1.wav"), ("a2", "A", "wav/a2.wav"), ("b1", "B", "wav/b1.wav")]
    with pytest.raises(InputFileError, match="utt2spk"):
        scan_audio_folder(d, metadata={"a1": "A"})
    t = kaldi_metadata_table(k, "original")
    assert t.to_dict("list") == {"utterance_id": ["a1", "a2", "b1"], "speaker_id": ["A", "A", "B"],
                                 "condition": ["original"] * 3, "sex": ["F", "F", "M"]}


@pytest.mark.parametrize("line, needle", [
    ("a1 sox ../audio/a1.wav -t wav - |", "piped command"),
    ("a1 | cat x", "piped command"),
    ("a1 -", "standard input"),
    ("a1 ark:/x/feats.ark:12", "ark:/scp:"),
    ("a1 /x/wav.ark:1234", "byte offset"),
    ("a1 ../audio/a1.wav[0:100]", "range"),
])
def test_extended_file_names_refused_with_file_and_line(tmp_path, audio, line, needle):
    marker = tmp_path / "ran"
    d = _folder(tmp_path, **{"wav.scp": f"a2 ../audio/a2.wav\n{line.replace('cat x', f'touch {marker}')}\n",
                             "utt2spk": "a1 A\na2 A\n"})
    with pytest.raises(InputFileError, match=needle) as e:
        read_kaldi_data_folder(d)
    assert "wav.scp" in str(e.value) and ":2" in str(e.value)
    assert not marker.exists()  # never executed


@pytest.mark.parametrize("files, where, needle", [
    ({"wav.scp": "a1 ../audio/a1.wav\na2 ../audio/a2.wav\n", "utt2spk": "a1 A\n"}, "wav.scp:2", "no speaker"),
    ({"wav.scp": "a1 ../audio/a1.wav\n", "utt2spk": "a1 A\nzz A\n"}, "utt2spk:2", "not in"),
    ({"wav.scp": "a1 ../audio/a1.wav\na1 ../audio/a2.wav\n", "utt2spk": "a1 A\n"}, "wav.scp:2", "again"),
    ({"wav.scp": "a1 ../audio/a1.wav\n\n", "utt2spk": "a1 A\n"}, "wav.scp:2", "blank"),
    ({"wav.scp": "a1\n", "utt2spk": "a1 A\n"}, "wav.scp:1", "expected"),
    ({"wav.scp": "a1 ../audio/nope.wav\n", "utt2spk": "a1 A\n"}, "wav.scp:1", "does not exist"),
    ({"wav.scp": "a1 ../audio/a1.wav\n", "utt2spk": "a1 A B\n"}, "utt2spk:1", "expected"),
    ({"wav.scp": "a1 ../audio/a1.wav\n", "utt2spk": "a1 A\n", "spk2gender": "A x\n"}, "spk2gender:1", "'m' or 'f'"),
    ({"wav.scp": "a1 ../audio/a1.wav\n", "utt2spk": "a1 A\n", "spk2gender": "A m\nB m\n"}, "spk2gender:2",
     "no utterance in"),
    ({"wav.scp": "a1 ../audio/a1.wav\n", "utt2spk": "a1 A\n", "text": "a9 hi\n"}, "text:1", "not in"),
    ({"wav.scp": "a1 ../audio/a1.wav\n", "utt2spk": "a1 A\n", "spk2utt": "B a1\n"}, "spk2utt:1", "disagrees"),
])
def test_inconsistent_folders_name_file_and_line(tmp_path, audio, files, where, needle):
    d = _folder(tmp_path, **files)
    with pytest.raises(InputFileError, match=needle) as e:
        read_kaldi_data_folder(d)
    assert where in str(e.value)


def test_missing_utt2spk(tmp_path, audio):
    d = _folder(tmp_path, **{"wav.scp": "a1 ../audio/a1.wav\n"})
    with pytest.raises(InputFileError, match="utt2spk"):
        read_kaldi_data_folder(d)


def test_write_then_read_round_trip(tmp_path, audio):
    out = tmp_path / "out"
    wav = {"a1": audio / "a1.wav", "b1": audio / "b1.wav"}
    write_kaldi_data_folder(out, wav, {"a1": "A", "b1": "B"}, sex={"A": "F", "B": "m"},
                            text={"a1": "hi  there", "b1": ""})
    assert (out / "spk2utt").read_text() == "A a1\nB b1\n"
    assert (out / "spk2gender").read_text() == "A f\nB m\n"
    k = read_kaldi_data_folder(out)
    assert {u: p.resolve() for u, p in k.wav.items()} == {u: p.resolve() for u, p in wav.items()}
    assert k.sex == {"A": "F", "B": "M"} and k.text == {"a1": "hi there", "b1": ""}
    with pytest.raises(InputFileError):
        write_kaldi_data_folder(out, {"a 1": audio / "a1.wav"}, {"a 1": "A"})


ident = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_characters="|[]:"),
                min_size=1, max_size=6).filter(lambda s: not any(c.isspace() for c in s))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=" ab|-:[]\t\nm f0", max_size=30), min_size=1, max_size=4),
       st.lists(st.text(alphabet=" ab\nA-", max_size=20), max_size=3))
def test_fuzz_only_our_error(tmp_path_factory, scp_lines, u2s_lines):
    """Arbitrary content never crashes with anything but InputFileError (and never runs anything)."""
    d = tmp_path_factory.mktemp("fz")
    (d / "wav.scp").write_text("\n".join(scp_lines))
    (d / "utt2spk").write_text("\n".join(u2s_lines))
    try:
        read_kaldi_data_folder(d, check_files=False)
    except InputFileError:
        pass


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(ident, st.tuples(ident, st.sampled_from("MF"), st.text(alphabet="ab c", max_size=8)),
                       min_size=1, max_size=6))
def test_fuzz_round_trip(tmp_path_factory, rows):
    d = tmp_path_factory.mktemp("rt")
    wav = {u: d / "wav" / f"x{i}.wav" for i, u in enumerate(rows)}
    u2s = {u: r[0] for u, r in rows.items()}
    sex = {r[0]: r[1] for r in rows.values()}
    # a speaker's sex must be unique: take the last drawn
    sex = {s: sex[s] for s in set(u2s.values())}
    text = {u: r[2] for u, r in rows.items()}
    from vpeval.io.kaldi_data import speaker_order_problem

    if speaker_order_problem(u2s) is not None:  # Kaldi would reject the folder: nothing is written
        with pytest.raises(InputFileError, match="validate_data_dir"):
            write_kaldi_data_folder(d, wav, u2s, sex=sex, text=text)
        assert not (d / "wav.scp").exists()
        return
    write_kaldi_data_folder(d, wav, u2s, sex=sex, text=text)
    k = read_kaldi_data_folder(d, check_files=False)
    assert k.utt2spk == dict(sorted(u2s.items()))
    assert {u: p.resolve() for u, p in k.wav.items()} == {u: p.resolve() for u, p in wav.items()}
    assert k.sex == dict(sorted(sex.items()))
    assert k.text == {u: " ".join(t.split()) for u, t in sorted(text.items())}


def test_cli_refuses_a_piped_data_folder_and_metadata_out_without_one(tmp_path, audio):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    marker = tmp_path / "ran"
    d = _folder(tmp_path, **{"wav.scp": f"a1 ../audio/a1.wav\na2 touch {marker} |\n", "utt2spk": "a1 A\na2 A\n"})
    r = CliRunner().invoke(app, ["anonymize", str(d), str(tmp_path / "out"), "-q"])
    assert r.exit_code == 2 and f"{d / 'wav.scp'}:2" in r.output and "piped command" in r.output
    assert not marker.exists() and not (tmp_path / "out" / "wav.scp").exists()
    r = CliRunner().invoke(app, ["embed", str(d), "-o", str(tmp_path / "e.npz"), "-q"])
    assert r.exit_code == 2 and "piped command" in r.output
    r = CliRunner().invoke(app, ["embed", str(audio), "-o", str(tmp_path / "e.npz"), "-q",
                                 "--metadata-out", str(tmp_path / "m.csv")])
    assert r.exit_code == 2 and "Kaldi data folder" in r.output


def _cli(*args):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    return CliRunner().invoke(app, [str(a) for a in args])


def test_embed_append_metadata_out_keeps_the_earlier_rows_and_refuses_duplicates(tmp_path, audio):
    """Two data folders of original speech appended in turn: the CSV keeps both, as the .npz does (issue 28)."""
    d1 = _folder(tmp_path, **{"wav.scp": "a1 ../audio/a1.wav\na2 ../audio/a2.wav\n", "utt2spk": "a1 A\na2 A\n"})
    d2 = tmp_path / "data2"
    d2.mkdir()
    (d2 / "wav.scp").write_text("b1 ../audio/b1.wav\n")
    (d2 / "utt2spk").write_text("b1 B\n")
    e, m = tmp_path / "e.npz", tmp_path / "m.csv"
    for d in (d1, d2):
        r = _cli("embed", d, "-o", e, "-q", "--metadata-out", m, "--append")
        assert r.exit_code == 0, r.output
    import pandas as pd

    from vpeval.io.embeddings import read_embeddings

    table = pd.read_csv(m, dtype=str)
    assert table["utterance_id"].tolist() == ["a1", "a2", "b1"] == read_embeddings(e).utterance_id.tolist()
    before = (e.read_bytes(), m.read_bytes())
    r = _cli("embed", d2, "-o", e, "-q", "--metadata-out", m, "--append")
    assert r.exit_code == 2 and str(e) in r.output and "'b1'" in r.output and "<EmbeddingSet>" not in r.output
    assert (e.read_bytes(), m.read_bytes()) == before


def test_anonymize_force_never_replaces_the_folder_holding_its_input_audio(tmp_path, audio):
    """An earlier output whose files are this run's input (through wav.scp) is never replaced (issue 28)."""
    d1 = _folder(tmp_path, **{"wav.scp": "a1 ../audio/a1.wav\na2 ../audio/a2.wav\n", "utt2spk": "a1 A\na2 A\n"})
    out = tmp_path / "anon"
    r = _cli("anonymize", d1, out, "-q")
    assert r.exit_code == 0, r.output
    d2 = tmp_path / "data2"
    d2.mkdir()
    (d2 / "wav.scp").write_text(f"a2 {out / 'wav' / 'a2.flac'}\nb1 {audio / 'b1.wav'}\n")
    (d2 / "utt2spk").write_text("a2 A\nb1 B\n")
    before = (out / "wav" / "a2.flac").read_bytes()
    r = _cli("anonymize", d2, out, "-q", "--force")
    assert r.exit_code == 3, r.output
    assert f"{d2 / 'wav.scp'}:1" in r.output and "a2.flac" in r.output
    assert (out / "wav" / "a2.flac").read_bytes() == before


def test_cr_only_line_ends_are_named_as_such(tmp_path, audio):
    d = _folder(tmp_path, **{"wav.scp": "a1 ../audio/a1.wav\ra2 ../audio/a2.wav\r", "utt2spk": "a1 A\na2 A\n"})
    with pytest.raises(InputFileError, match=r"wav.scp:1: a carriage return \(CR\) inside the line.*CR-only") as e:
        read_kaldi_data_folder(d)
    assert "does not exist" not in str(e.value)


# Kaldi's validate_data_dir.sh rules: each case is a folder Kaldi rejects, with the file:line and rule named
_OK = {"wav.scp": "a1 ../audio/a1.wav\na2 ../audio/a2.wav\nb1 ../audio/b1.wav\n", "utt2spk": "a1 A\na2 A\nb1 B\n"}


@pytest.mark.parametrize("change, where, needle", [
    ({"wav.scp": "a1 ../audio/a1.wav\nb1 ../audio/b1.wav\na2 ../audio/a2.wav\n"}, "wav.scp:3", "sorted by its first"),
    ({"utt2spk": "a2 A\na1 A\nb1 B\n"}, "utt2spk:2", "sorted by its first"),
    # the example: ids 1_2, 1_4, 13_1 sort as 13_1 < 1_2 < 1_4 (byte order), speakers 13 > 1
    ({"wav.scp": "13_1 ../audio/a1.wav\n1_2 ../audio/a2.wav\n1_4 ../audio/b1.wav\n",
      "utt2spk": "13_1 13\n1_2 1\n1_4 1\n"}, "utt2spk:2", "sorted by speaker"),
    ({"utt2spk": "a1 B\na2 B\nb1 A\n"}, "utt2spk:3", "sorted by speaker"),
    ({"spk2utt": "B b1\nA a1 a2\n"}, "spk2utt:2", "sorted by its first"),
    ({"spk2utt": "A a2 a1\nB b1\n"}, "spk2utt:1", "out of order"),
    ({"spk2gender": "B m\nA f\n"}, "spk2gender:2", "sorted by its first"),
    ({"spk2gender": "A f\nB m\nC f\n"}, "spk2gender:3", "same"),
    ({"text": "a1 hi\nb1 yo\n"}, "utt2spk:2", "no line in"),
    ({"text": "a2 hi\na1 yo\nb1 x\n"}, "text:2", "sorted by its first"),
])
def test_kaldi_rules_refused_with_file_line_and_rule(tmp_path, audio, change, where, needle):
    d = _folder(tmp_path, **dict(_OK, **change))
    with pytest.raises(InputFileError, match=needle) as e:
        read_kaldi_data_folder(d)
    assert where in str(e.value) and "Kaldi" in str(e.value)


def test_kaldi_speaker_order_with_prefixed_ids_passes(tmp_path, audio):
    # the cure the message proposes: speaker ids that prefix the utterance ids
    d = _folder(tmp_path, **{"wav.scp": "1-1_2 ../audio/a1.wav\n1-1_4 ../audio/a2.wav\n13-13_1 ../audio/b1.wav\n",
                             "utt2spk": "1-1_2 1\n1-1_4 1\n13-13_1 13\n", "spk2utt": "1 1-1_2 1-1_4\n13 13-13_1\n"})
    assert read_kaldi_data_folder(d).utt2spk == {"1-1_2": "1", "1-1_4": "1", "13-13_1": "13"}


def test_writer_refuses_what_kaldi_rejects(tmp_path, audio):
    wav = {"1_2": audio / "a1.wav", "1_4": audio / "a2.wav", "13_1": audio / "b1.wav"}
    with pytest.raises(InputFileError, match="13_1.*1_2.*prefix") as e:
        write_kaldi_data_folder(tmp_path / "out", wav, {"1_2": "1", "1_4": "1", "13_1": "13"})
    assert "validate_data_dir" in str(e.value)
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputFileError, match="text and utt2spk"):
        write_kaldi_data_folder(tmp_path / "out", {"a1": audio / "a1.wav", "b1": audio / "b1.wav"},
                                {"a1": "A", "b1": "B"}, text={"a1": "hi"})
    assert not (tmp_path / "out").exists()


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(ident, ident, min_size=1, max_size=8))
def test_speaker_order_rule_matches_sort_k2(u2s):
    """The writer's check agrees with a literal model of `LC_ALL=C sort -k2 -C` on the file it would write."""
    from vpeval.io.kaldi_data import speaker_order_problem

    lines = [f"{u} {u2s[u]}" for u in sorted(u2s)]
    key = lambda ln: (ln[ln.index(" "):].encode(), ln.encode())  # noqa: E731
    kaldi_ok = all(key(a) <= key(b) for a, b in zip(lines, lines[1:]))
    assert (speaker_order_problem(u2s) is None) == kaldi_ok
