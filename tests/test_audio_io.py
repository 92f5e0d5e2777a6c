"""Audio folder reading: formats, the 16 kHz rule, utterance/speaker ids, and errors naming the file."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from input_errors import expect_input_error  # tests/input_errors.py

from vpeval.audio.io import (
    AudioItem,
    read_audio,
    read_speaker_metadata,
    scan_audio_folder,
    write_audio,
)
from vpeval.errors import InputFileError, VpevalError


def tone(n=4000, f0=150.0, seed=0):
    """A harmonic tone plus a little noise, peak well below 1."""
    t = np.arange(n) / 16000
    x = sum(0.1 / k * np.sin(2 * np.pi * f0 * k * t) for k in range(1, 6))
    return x + 0.005 * np.random.default_rng(seed).standard_normal(n)


def write(path, x=None, sr=16000, **kw):
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), tone() if x is None else x, sr, **kw)
    return path


# --- read_audio / write_audio ------------------------------------------------------------------------


@pytest.mark.parametrize("ext", [".flac", ".wav"])
def test_roundtrip_exact_for_16bit_values(tmp_path, ext):
    # multiples of 1/32768 are exactly representable in 16-bit PCM
    x = np.array([0.0, 0.5, -0.5, 0.25, -1.0, 32767 / 32768, 1 / 32768])
    p = tmp_path / f"a-1{ext}"
    write_audio(p, x)
    y = read_audio(p)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x)
    assert sf.info(str(p)).samplerate == 16000


def test_roundtrip_quantisation_within_half_lsb(tmp_path):
    x = tone()
    write_audio(tmp_path / "a-1.flac", x)
    y = read_audio(tmp_path / "a-1.flac")
    assert y.shape == x.shape
    assert np.max(np.abs(y - x)) <= 0.5 / 32768 + 1e-12


def test_non_16k_is_refused_with_strict_rate_naming_file_and_rate(tmp_path):
    p = write(tmp_path / "spk-utt.wav", sr=22050)
    with pytest.raises(InputFileError) as ei:
        read_audio(p, strict_rate=True)
    msg = str(ei.value)
    assert str(p) in msg and "22050 Hz" in msg and "not resampled" in msg
    assert ei.value.path == str(p)


def test_unreadable_file_named(tmp_path):
    p = tmp_path / "spk-broken.flac"
    p.write_bytes(b"this is not audio at all" * 10)
    with pytest.raises(InputFileError) as ei:
        read_audio(p)
    assert str(p) in str(ei.value) and "cannot be read" in str(ei.value)


def test_missing_file_named(tmp_path):
    with pytest.raises(InputFileError, match="does not exist"):
        read_audio(tmp_path / "nope.flac")


def test_stereo_refused_unless_a_channel_is_chosen(tmp_path):
    left, right = tone(seed=1), tone(f0=230.0, seed=2)
    p = write(tmp_path / "s-1.wav", np.stack([left, right], axis=1), subtype="DOUBLE")
    with pytest.raises(InputFileError, match="2 channels.*--channel"):
        read_audio(p)
    np.testing.assert_array_equal(read_audio(p, channel=0), left)
    np.testing.assert_array_equal(read_audio(p, channel=1), right)
    with pytest.raises(InputFileError, match="channel 2 does not exist"):
        read_audio(p, channel=2)
    with pytest.raises(InputFileError, match="non-negative integer"):
        read_audio(p, channel=-1)


def test_empty_audio_refused(tmp_path):
    p = write(tmp_path / "s-1.wav", np.zeros(0))
    with pytest.raises(InputFileError, match="no samples"):
        read_audio(p)


def test_nan_in_float_wav_refused(tmp_path):
    x = tone()
    x[10] = np.nan
    p = write(tmp_path / "s-1.wav", x, subtype="FLOAT")
    with pytest.raises(InputFileError, match="NaN"):
        read_audio(p)


def test_write_refuses_clipping_and_unknown_extension(tmp_path):
    with pytest.raises(InputFileError, match="would clip"):
        write_audio(tmp_path / "a.flac", np.array([0.1, 1.2]))
    with pytest.raises(InputFileError, match="extension"):
        write_audio(tmp_path / "a.mp3", np.array([0.1, 0.2]))
    with pytest.raises(InputFileError, match="NaN"):
        write_audio(tmp_path / "a.wav", np.array([0.1, np.nan]))
    assert not (tmp_path / "a.flac").exists()


def test_errors_are_value_errors():
    assert issubclass(InputFileError, VpevalError) and issubclass(InputFileError, ValueError)


# --- scan_audio_folder ---------------------------------------------------------------------------------


def test_scan_ids_from_stems_sorted_and_recursive(tmp_path):
    write(tmp_path / "b" / "20-3-0001.flac")
    write(tmp_path / "10-7-0000.wav")
    write(tmp_path / "b" / "c" / "10-7-0002.FLAC")
    (tmp_path / "notes.txt").write_text("ignored")
    items = scan_audio_folder(tmp_path)
    assert [it.utterance_id for it in items] == ["10-7-0000", "10-7-0002", "20-3-0001"]
    assert [it.speaker_id for it in items] == ["10", "10", "20"]
    assert items[1].relative_path.as_posix() == "b/c/10-7-0002.FLAC"
    assert all(isinstance(it, AudioItem) for it in items)


def test_scan_stem_without_speaker_field_is_an_error(tmp_path):
    write(tmp_path / "10-1-0.flac")
    bad = write(tmp_path / "lonely.flac")
    with pytest.raises(InputFileError) as ei:
        scan_audio_folder(tmp_path)
    assert str(bad) in str(ei.value) and "cannot tell the speaker" in str(ei.value)


def test_scan_empty_speaker_field_is_an_error(tmp_path):
    write(tmp_path / "-1-0.flac")
    with pytest.raises(InputFileError, match="cannot tell the speaker"):
        scan_audio_folder(tmp_path)


def test_scan_metadata_overrides_and_missing_speaker(tmp_path):
    write(tmp_path / "aa.flac")
    write(tmp_path / "bb-1.flac")
    meta = tmp_path / "meta.csv"
    meta.write_text("utterance_id,speaker_id,sex\naa,S1,F\nbb-1,S2,M\nunused,S3,F\n")
    items = scan_audio_folder(tmp_path / ".", metadata=meta)
    assert [(it.utterance_id, it.speaker_id) for it in items] == [("aa", "S1"), ("bb-1", "S2")]
    meta.write_text("utterance_id,speaker_id\naa,S1\n")
    with pytest.raises(InputFileError) as ei:
        scan_audio_folder(tmp_path, metadata=meta)
    assert "bb-1" in str(ei.value) and "no speaker" in str(ei.value)
    assert items == scan_audio_folder(tmp_path, metadata={"aa": "S1", "bb-1": "S2"})


def test_metadata_errors_with_line_numbers(tmp_path):
    meta = tmp_path / "meta.csv"
    expect_input_error(read_speaker_metadata, meta, "utterance_id,speaker_id\naa,S1\nbb,\n",
                       r"meta\.csv:3: utterance 'bb' has an empty speaker_id")
    expect_input_error(read_speaker_metadata, meta, "utterance,speaker_id\naa,S1\n", r"meta\.csv:1: missing column")
    expect_input_error(read_speaker_metadata, meta, "utterance_id,speaker_id\naa,S1\nbb,S2\naa,S9\n",
                       r"meta\.csv:4: .*'S9'.*'S1' on line 2")
    with pytest.raises(InputFileError, match="does not exist"):
        read_speaker_metadata(tmp_path / "none.csv")


def test_scan_duplicate_stems_and_empty_or_missing_folder(tmp_path):
    write(tmp_path / "x" / "1-1.flac")
    write(tmp_path / "y" / "1-1.wav")
    with pytest.raises(InputFileError, match="also used by"):
        scan_audio_folder(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFileError, match="no audio files"):
        scan_audio_folder(tmp_path / "empty")
    with pytest.raises(InputFileError, match="does not exist"):
        scan_audio_folder(tmp_path / "absent")
