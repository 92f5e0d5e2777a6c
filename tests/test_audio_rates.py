"""Audio at any sampling rate: resampled to 16 kHz on read (soxr), each file's rate recorded in the outputs and
named in the report; --strict-rate keeps the refusal; anonymizers write at the input's rate or a stated one."""

from __future__ import annotations

import json

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")
pytest.importorskip("soxr")
pytest.importorskip("librosa")

from typer.testing import CliRunner  # noqa: E402

from vpeval.audio.anonymize import anonymize_folder, mcadams  # noqa: E402
from vpeval.audio.embed import MfccStatsExtractor, embed_folder  # noqa: E402
from vpeval.audio.io import read_audio, read_audio_rate, resample  # noqa: E402
from vpeval.cli.main import app  # noqa: E402
from vpeval.errors import InputFileError, VpevalError  # noqa: E402
from vpeval.io.embeddings import EmbeddingSet, read_embeddings, write_embeddings  # noqa: E402


def voice(rate, seconds=1.0, f0=130.0, seed=0):
    """A vowel-like harmonic signal with all components below 3.4 kHz, sampled at ``rate`` from one formula:
    the same continuous signal at every rate (exactly representable at 8 kHz and above)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(seconds * rate))) / rate
    x = np.zeros_like(t)
    for k in range(1, int(3400 // f0) + 1):
        f = k * f0
        gain = sum(np.exp(-0.5 * ((f - fr) / 150.0) ** 2) for fr in (700, 1200, 2600)) + 0.05
        x += gain / k * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
    x *= 1 + 0.3 * np.sin(2 * np.pi * 3 * t)
    return 0.4 * x / np.max(np.abs(x))


def _write(path, rate, **kw):
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), voice(rate, **kw), rate, subtype="DOUBLE" if path.suffix == ".wav" else "PCM_16")
    return path


@pytest.mark.parametrize("rate", [8000, 22050, 44100, 48000])
def test_read_resamples_to_the_analytic_16k_signal(tmp_path, rate):
    p = _write(tmp_path / f"s-{rate}.wav", rate)
    x, r = read_audio_rate(p)
    assert r == rate and x.dtype == np.float64
    assert x.size == round(rate * 16000 / rate)  # one second
    want = voice(16000)
    inner = slice(800, -800)  # 50 ms from the ends, where the filter sees no edge
    assert np.max(np.abs(x[inner] - want[inner])) < 2e-3
    np.testing.assert_array_equal(read_audio(p), x)


def test_16k_file_is_read_unchanged_and_strict_rate_accepts_it(tmp_path):
    p = _write(tmp_path / "s-1.wav", 16000)
    x, r = read_audio_rate(p, strict_rate=True)
    assert r == 16000
    np.testing.assert_array_equal(x, voice(16000))


def test_strict_rate_refuses_other_rates(tmp_path):
    p = _write(tmp_path / "s-1.flac", 8000)
    with pytest.raises(InputFileError, match=r"s-1\.flac.*8000 Hz.*--strict-rate"):
        read_audio(p, strict_rate=True)


def test_resample_length_identity_and_errors():
    x = voice(8000, seconds=0.1)
    assert resample(x, 8000, 48000).shape == (4800,)
    y = resample(x, 8000, 8000)
    np.testing.assert_array_equal(y, x)
    assert y is not x
    for bad in (0, -8000, 8000.5, True):
        with pytest.raises(VpevalError, match="positive integer"):
            resample(x, bad, 16000)
    with pytest.raises(VpevalError, match="1-D"):
        resample(np.zeros((2, 10)), 8000, 16000)


def _mixed_folder(root):
    """Speaker 11 at 8 kHz, 22 at 48 kHz, 33 at 16 kHz; two one-second utterances each."""
    for spk, rate, f0 in (("11", 8000, 110.0), ("22", 48000, 190.0), ("33", 16000, 150.0)):
        for u in range(2):
            _write(root / f"{spk}-1-000{u}.flac", rate, f0=f0 + 7 * u, seed=int(spk) + u)
    return root


def test_anonymize_writes_at_the_input_rate_and_records_it(tmp_path):
    src = _mixed_folder(tmp_path / "in")
    df = anonymize_folder(src, tmp_path / "out", alpha=0.8, quiet=True)
    rates = {"11": 8000, "22": 48000, "33": 16000}
    for row in df.itertuples():
        rate = rates[row.speaker_id]
        assert row.input_rate_hz == rate and row.output_rate_hz == rate and row.duration_s == 1.0
        info = sf.info(str(tmp_path / "out" / row.output))
        assert info.samplerate == rate and info.frames == rate
        # the anonymizer runs at 16 kHz, its output is resampled back to the file's rate
        want = mcadams(read_audio(src / row.output), 0.8)
        if rate != 16000:
            want = resample(want, 16000, rate)
        got = sf.read(str(tmp_path / "out" / row.output), dtype="float64")[0]
        assert np.max(np.abs(got - want)) <= 0.5 / 32768 + 1e-12
    table = (tmp_path / "out" / "anonymization.csv").read_text().splitlines()
    assert table[0].endswith(",output,input_rate_hz,output_rate_hz")


def test_anonymize_at_a_stated_rate_and_strict_refusal(tmp_path):
    src = _mixed_folder(tmp_path / "in")
    df = anonymize_folder(src, tmp_path / "o16", alpha=0.8, quiet=True, out_rate=16000)
    assert set(df["output_rate_hz"]) == {16000}
    for row in df.itertuples():
        got = sf.read(str(tmp_path / "o16" / row.output), dtype="float64")
        assert got[1] == 16000
        assert np.max(np.abs(got[0] - mcadams(read_audio(src / row.output), 0.8))) <= 0.5 / 32768 + 1e-12
    with pytest.raises(InputFileError, match=r"11-1-0000\.flac.*8000 Hz"):
        anonymize_folder(src, tmp_path / "o", alpha=0.8, quiet=True, strict_rate=True)
    with pytest.raises(VpevalError, match="out_rate"):
        anonymize_folder(src, tmp_path / "o2", alpha=0.8, quiet=True, out_rate=16000.0)


def test_embed_resamples_records_rates_and_keeps_them_on_disk(tmp_path):
    src = _mixed_folder(tmp_path / "in")
    ext = MfccStatsExtractor()
    es = embed_folder(src, ext, quiet=True)
    assert es.input_rate_hz.tolist() == [8000, 8000, 48000, 48000, 16000, 16000]
    for i, u in enumerate(es.utterance_id):
        np.testing.assert_array_equal(es.embeddings[i], ext.embed(read_audio(src / f"{u}.flac")))
    # the same continuous signal gives nearly the same embedding read at 8 or 48 kHz as made at 16 kHz: far
    # closer than another voice (MFCC statistics of any two voices have a cosine near 1, so compare 1 - cos)
    def dissimilarity(a, b):
        return 1 - a @ b / np.linalg.norm(a) / np.linalg.norm(b)

    native = ext.embed(voice(16000, f0=110.0, seed=11))
    other = ext.embed(voice(16000, f0=117.0, seed=12))
    for row in (0, 2):  # 11-1-0000 at 8 kHz, 22-1-0000 at 48 kHz (against its own native version)
        mine = native if row == 0 else ext.embed(voice(16000, f0=190.0, seed=22))
        assert dissimilarity(es.embeddings[row], mine) < 0.1 * dissimilarity(other, native)
    write_embeddings(tmp_path / "e.npz", es)
    back = read_embeddings(tmp_path / "e.npz")
    np.testing.assert_array_equal(back.input_rate_hz, es.input_rate_hz)
    assert back.select(back.speaker_id == "22").input_rate_hz.tolist() == [48000, 48000]
    plain = EmbeddingSet(es.embeddings[:1], ["99-1-0000"], ["99"], ["original"], es.extractor,
                         extractor_info=es.extractor_info)  # rows without rates, of the same extractor
    assert plain.input_rate_hz is None
    assert es.concat(plain).input_rate_hz.tolist() == [8000, 8000, 48000, 48000, 16000, 16000, 0]
    with pytest.raises(InputFileError, match="input_rate_hz has shape"):
        EmbeddingSet(es.embeddings, es.utterance_id, es.speaker_id, es.condition, es.extractor, [16000])


def test_cli_anonymize_embed_audit_name_the_rates(tmp_path):
    src = tmp_path / "in"
    for s, (spk, rate) in enumerate((("11", 8000), ("12", 8000), ("21", 48000), ("22", 48000))):
        for u in range(3):
            _write(src / f"{spk}-1-000{u}.flac", rate, f0=100.0 + 30 * s + 5 * u, seed=10 * s + u)
    run = CliRunner().invoke
    r = run(app, ["anonymize", str(src), str(tmp_path / "anon"), "--json", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["input_rates_hz"] == {"8000": 6, "48000": 6}
    assert sf.info(str(tmp_path / "anon" / "21-1-0000.flac")).samplerate == 48000
    r = run(app, ["anonymize", str(src), str(tmp_path / "a16"), "--rate", "16000"])
    assert r.exit_code == 0 and "resampled to 16 kHz on read: 6 at 8000 Hz, 6 at 48000 Hz" in r.output
    r = run(app, ["anonymize", str(src), str(tmp_path / "a16q"), "--rate", "16000", "-q"])
    assert r.exit_code == 0 and r.output == ""  # -q: nothing but errors, in every command
    assert sf.info(str(tmp_path / "a16" / "21-1-0000.flac")).samplerate == 16000
    r = run(app, ["anonymize", str(src), str(tmp_path / "x"), "--strict-rate", "-q"])
    assert r.exit_code == 2 and "8000 Hz" in r.output
    emb = tmp_path / "sys" / "embeddings_mfcc.npz"
    r = run(app, ["embed", str(src), "-o", str(emb)])
    assert r.exit_code == 0 and "6 at 8000 Hz, 6 at 48000 Hz" in r.output
    r = run(app, ["embed", str(tmp_path / "anon"), "-o", str(emb), "-c", "anonymized", "--append", "-q", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["input_rates_hz"] == {"8000": 6, "48000": 6}
    r = run(app, ["audit", str(tmp_path / "sys"), "-o", str(tmp_path / "rep"), "--backend", "cosine",
                  "--no-verdict", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    (inp,) = [i for i in doc["inputs"] if i["name"] == "sys/embeddings_mfcc"]
    assert inp["input_rates_hz"] == {"8000": 12, "48000": 12}
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "sys/embeddings_mfcc: 8000 Hz (12 rows), 48000 Hz (12 rows)" in html
