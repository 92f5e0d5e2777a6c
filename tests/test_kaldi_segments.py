"""Kaldi ``segments``: utterances as time ranges of recordings, through anonymize, embed, utility and the writer."""

import numpy as np
import pytest

from vpeval.audio.io import read_audio, read_item_audio, scan_audio_folder, write_audio
from vpeval.errors import InputFileError
from vpeval.io.kaldi_data import KaldiSegment, read_kaldi_data_folder, write_kaldi_data_folder

SR = 16000


def _tone(f0, seconds, amp=0.3):
    t = np.arange(int(round(SR * seconds))) / SR
    return amp * np.sin(2 * np.pi * f0 * t)


@pytest.fixture
def seg_folder(tmp_path):
    """Recording r1 (2 s: 1 s at 120 Hz then 1 s at 240 Hz) cut into two utterances, recording r2 whole."""
    d = tmp_path / "data"
    (d / "audio").mkdir(parents=True)
    r1 = np.r_[_tone(120, 1.0), _tone(240, 1.0)]
    write_audio(d / "audio" / "r1.wav", r1)
    write_audio(d / "audio" / "r2.wav", _tone(180, 0.8))
    (d / "wav.scp").write_text("r1 audio/r1.wav\nr2 audio/r2.wav\n")
    (d / "segments").write_text("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 -1\nB-r2-a r2 0.25 0.75\n")
    (d / "utt2spk").write_text("A-r1-a A\nA-r1-b A\nB-r2-a B\n")
    (d / "spk2gender").write_text("A f\nB m\n")
    (d / "text").write_text("A-r1-a ONE\nA-r1-b TWO\nB-r2-a THREE\n")
    return d


def test_reader_and_items_cut_the_recording(seg_folder):
    k = read_kaldi_data_folder(seg_folder)
    assert list(k.wav) == ["A-r1-a", "A-r1-b", "B-r2-a"]
    assert k.segments["A-r1-b"] == KaldiSegment("r1", 1.0, None, str(seg_folder / "segments"), 2)
    assert k.wav["A-r1-a"] == k.wav["A-r1-b"] == seg_folder / "audio" / "r1.wav"
    items = scan_audio_folder(seg_folder)
    whole = read_audio(seg_folder / "audio" / "r1.wav")
    a, b, c = (read_item_audio(it) for it in items)
    assert a.size == SR and b.size == SR and c.size == SR // 2
    np.testing.assert_array_equal(np.r_[a, b], whole)  # the two segments tile the recording exactly
    np.testing.assert_array_equal(c, read_audio(seg_folder / "audio" / "r2.wav")[SR // 4: 3 * SR // 4])
    assert [it.relative_path.as_posix() for it in items] == ["wav/A-r1-a.wav", "wav/A-r1-b.wav", "wav/B-r2-a.wav"]


def test_anonymize_and_embed_per_segment(seg_folder, tmp_path):
    from vpeval.audio.anonymize import anonymize_folder
    from vpeval.audio.embed import get_extractor
    from vpeval.audio.embed.base import embed_folder

    out = tmp_path / "anon"
    df = anonymize_folder(seg_folder, out, alpha=0.8, quiet=True)
    assert sorted(df["utterance_id"]) == ["A-r1-a", "A-r1-b", "B-r2-a"]
    k = read_kaldi_data_folder(out)  # a valid data folder, one file per utterance, no segments
    assert k.segments is None and not (out / "segments").exists()
    assert [read_audio(p).size for p in k.wav.values()] == [SR, SR, SR // 2]
    assert k.text == {"A-r1-a": "ONE", "A-r1-b": "TWO", "B-r2-a": "THREE"}
    ex = get_extractor("mfcc")
    es = embed_folder(seg_folder, ex, quiet=True)
    assert es.utterance_id.tolist() == ["A-r1-a", "A-r1-b", "B-r2-a"]
    # each row is the embedding of the segment alone, not of the whole recording
    cut = tmp_path / "cut"
    for it in scan_audio_folder(seg_folder):
        write_audio(cut / f"{it.utterance_id}.wav", read_item_audio(it))
    ref = embed_folder(cut, ex, quiet=True, metadata={"A-r1-a": "A", "A-r1-b": "A", "B-r2-a": "B"})
    np.testing.assert_allclose(es.embeddings, ref.embeddings, rtol=1e-6, atol=1e-9)
    assert not np.allclose(es.embeddings[0], es.embeddings[1])


def test_utility_pitch_pairs_segments(seg_folder, tmp_path):
    from vpeval.cli.utility import _pitch

    # the segmented folder against a data folder of the cut utterances (one file each): the same samples, so
    # every rho_F0 is 1; read whole, the recording r1 would be twice the length of its cut utterances
    items = scan_audio_folder(seg_folder)
    cut = tmp_path / "cut"
    for it in items:
        write_audio(cut / "wav" / f"{it.utterance_id}.wav", read_item_audio(it))
    write_kaldi_data_folder(cut, {it.utterance_id: cut / "wav" / f"{it.utterance_id}.wav" for it in items},
                            {it.utterance_id: it.speaker_id for it in items})
    res = _pitch(seg_folder, cut, quiet=True)
    assert sorted(res.utterances) == ["A-r1-a", "A-r1-b", "B-r2-a"]
    assert all(v == pytest.approx(1.0) for v in res.utterances.values())


@pytest.mark.parametrize("segments, line, needle", [
    ("A-r1-a r1 0.0 1.2\nA-r1-b r1 1.0 -1\nB-r2-a r2 0.25 0.75\n", 2, "overlap"),
    ("A-r1-a r1 0.0 -1\nA-r1-b r1 1.0 1.5\nB-r2-a r2 0.25 0.75\n", 2, "overlap"),
    ("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 2.6\nB-r2-a r2 0.25 0.75\n", 2, "outside recording"),
    ("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 -1\nB-r2-a r2 0.9 -1\n", 3, "outside recording"),
    ("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 0.5\nB-r2-a r2 0.25 0.75\n", 2, "not after its start"),
    ("A-r1-a r1 -0.1 1.0\nA-r1-b r1 1.0 -1\nB-r2-a r2 0.25 0.75\n", 1, "before the recording"),
    ("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 -1\nB-r2-a r9 0.25 0.75\n", 3, "not in"),
    ("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 x\nB-r2-a r2 0.25 0.75\n", 2, "not a number"),
    ("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0\nB-r2-a r2 0.25 0.75\n", 2, "expected"),
    ("A-r1-b r1 1.0 -1\nA-r1-a r1 0.0 1.0\nB-r2-a r2 0.25 0.75\n", 2, "sorted"),
])
def test_bad_segments_name_file_and_line(seg_folder, segments, line, needle):
    (seg_folder / "segments").write_text(segments)
    with pytest.raises(InputFileError, match=needle) as e:
        read_kaldi_data_folder(seg_folder)
    assert f"segments:{line}" in str(e.value)


def test_a_segment_overshooting_by_at_most_half_a_second_is_read_to_the_end_with_a_warning(seg_folder):
    """Kaldi's extract-segments truncates a segment ending up to --max-overshoot (0.5 s) after its recording:
    so does vpeval, saying so with file and line; 0.5 s and more beyond it is refused (above)."""
    from vpeval.audio.io import read_item_audio, scan_audio_folder
    from vpeval.errors import SegmentOvershootWarning

    (seg_folder / "segments").write_text("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 2.003\nB-r2-a r2 0.25 0.75\n")
    read_kaldi_data_folder(seg_folder)  # accepted
    item = next(it for it in scan_audio_folder(seg_folder) if it.utterance_id == "A-r1-b")
    with pytest.warns(SegmentOvershootWarning, match=r"segments:2: segment 1\.0-2\.003 s .* ends 0\.003 s after"):
        x = read_item_audio(item)
    assert x.size == 16000  # the second half of the 2 s recording, to its end


def test_utt2spk_checked_against_segments_and_recordings(seg_folder):
    (seg_folder / "utt2spk").write_text("A-r1-a A\nA-r1-b A\nB-r2-a B\nB-r2-z B\n")
    with pytest.raises(InputFileError, match="not in .*segments") as e:
        read_kaldi_data_folder(seg_folder)
    assert "utt2spk:4" in str(e.value)
    (seg_folder / "utt2spk").write_text("A-r1-a A\nA-r1-b A\n")
    (seg_folder / "segments").write_text("A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 -1\n")
    (seg_folder / "text").unlink()
    (seg_folder / "spk2gender").write_text("A f\n")
    with pytest.raises(InputFileError, match="'r2' has no segment") as e:
        read_kaldi_data_folder(seg_folder)
    assert "wav.scp:2" in str(e.value)


def test_writer_round_trip_with_segments(seg_folder, tmp_path):
    k = read_kaldi_data_folder(seg_folder)
    out = tmp_path / "copy"
    recs = {sg.recording: k.wav[u] for u, sg in k.segments.items()}
    write_kaldi_data_folder(out, recs, k.utt2spk, sex=k.sex, text=k.text, segments=k.segments)
    assert (out / "segments").read_text() == "A-r1-a r1 0.0 1.0\nA-r1-b r1 1.0 -1\nB-r2-a r2 0.25 0.75\n"
    back = read_kaldi_data_folder(out)
    assert {u: (g.recording, g.start, g.end) for u, g in back.segments.items()} == \
        {u: (g.recording, g.start, g.end) for u, g in k.segments.items()}
    with pytest.raises(InputFileError, match="overlap"):
        write_kaldi_data_folder(tmp_path / "bad", recs, k.utt2spk,
                                segments={"A-r1-a": ("r1", 0, 1.5), "A-r1-b": ("r1", 1.0, None),
                                          "B-r2-a": ("r2", 0, None)})
    assert not (tmp_path / "bad").exists()


def test_segment_command_cuts_fixed_lengths_and_reports_few(seg_folder, tmp_path):
    import json

    from typer.testing import CliRunner

    from vpeval.cli.main import app

    out = tmp_path / "seg"
    r = CliRunner().invoke(app, ["segment", str(seg_folder), "-o", str(out), "--seconds", "0.4",
                                 "--min-segments", "2", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    # A-r1-a (1 s) and A-r1-b (1 s) give 2 segments each; B-r2-a (0.5 s) gives 1: speaker B has too few
    assert (s["segments"], s["speakers"], s["speakers_with_too_few_segments"], s["few"]) == (5, 2, 1, ["B"])
    k = read_kaldi_data_folder(out)  # a valid data folder with segments, read back by the same rules
    assert list(k.segments) == ["A-r1-a-0000", "A-r1-a-0001", "A-r1-b-0000", "A-r1-b-0001", "B-r2-a-0000"]
    assert (k.segments["A-r1-b-0001"].start, k.segments["A-r1-b-0001"].end) == (1.4, 1.8)
    assert (k.segments["B-r2-a-0000"].start, k.segments["B-r2-a-0000"].end) == (0.25, 0.65)
    assert k.sex == {"A": "F", "B": "M"} and k.text is None
    items = scan_audio_folder(out)
    whole = read_audio(seg_folder / "audio" / "r1.wav")
    np.testing.assert_array_equal(read_item_audio(items[3]), whole[int(1.4 * SR): int(1.8 * SR)])
    r = CliRunner().invoke(app, ["segment", str(seg_folder), "-o", str(tmp_path / "none"), "--seconds", "5"])
    assert r.exit_code == 2 and "nothing to write" in r.output


def test_segment_times_are_written_without_binary_noise(seg_folder, tmp_path):
    """`vpeval segment --seconds 0.1` wrote times such as 0.30000000000000004 (0.1 + 0.2); every written time is now
    rounded to the microsecond and written as the shortest text of that value, and reads back as written."""
    import re

    from typer.testing import CliRunner

    from vpeval.cli.main import app

    out = tmp_path / "seg"
    r = CliRunner().invoke(app, ["segment", str(seg_folder), "-o", str(out), "--seconds", "0.1"])
    assert r.exit_code == 0, r.output
    lines = (out / "segments").read_text().splitlines()
    times = [t for line in lines for t in line.split()[2:]]
    assert len(lines) == 25 and all(re.fullmatch(r"\d+\.\d{1,6}", t) for t in times), times
    assert "A-r1-a-0002 r1 0.2 0.3" in lines and "B-r2-a-0002 r2 0.45 0.55" in lines
    k = read_kaldi_data_folder(out)
    assert [(g.start, g.end) for g in k.segments.values()][:4] == [(0.0, 0.1), (0.1, 0.2), (0.2, 0.3), (0.3, 0.4)]
    # the writer rounds times given by code alike, and keeps the order of abutting segments (no overlap made)
    k0 = read_kaldi_data_folder(seg_folder)
    recs = {sg.recording: k0.wav[u] for u, sg in k0.segments.items()}
    write_kaldi_data_folder(tmp_path / "w", recs, k0.utt2spk,
                            segments={"A-r1-a": ("r1", 0.1 + 0.2, 0.7 + 0.1 + 1e-9), "A-r1-b": ("r1", 0.8, None),
                                      "B-r2-a": ("r2", 0.0, 1 / 3)})
    assert (tmp_path / "w" / "segments").read_text() == ("A-r1-a r1 0.3 0.8\nA-r1-b r1 0.8 -1\n"
                                                         "B-r2-a r2 0.0 0.333333\n")
