"""Running on a Dask cluster (issue 14): a real scheduler and two worker processes on the loopback interface.

Every result computed through the cluster is compared with the single-process result for exact equality
(audio bytes, embedding rows bit for bit, metrics to the last digit).
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from conftest import ROOT, SHARED  # noqa: E402
from vpeval.cli.main import app  # noqa: E402
from vpeval.audio.embed import MfccStatsExtractor, embed_folder  # noqa: E402
from vpeval.errors import InputFileError, VpevalError  # noqa: E402
from vpeval.io.embeddings import read_embeddings  # noqa: E402
from vpeval import rowscan  # noqa: E402
from vpeval.metrics.linkage import lid, linkage_analysis  # noqa: E402
from vpeval.pipeline import cluster as cl  # noqa: E402
from vpeval.pipeline.protocols import score_rows  # noqa: E402

REAL = SHARED / "data" / "librispeech-mini" / "test-other"
# five short utterances (2.0-2.9 s) of four speakers
UTTERANCES = ["3005-163389-0007", "3331-159605-0004", "367-130732-0006", "2414-128291-0009", "1998-15444-0008"]


@pytest.fixture(scope="module")
def scheduler():
    """Address of a scheduler with two single-threaded worker processes on 127.0.0.1."""
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=50) as local:
        yield local.scheduler_address


@pytest.fixture(scope="module")
def client(scheduler):
    with distributed.Client(scheduler) as c:
        yield c


@pytest.fixture(scope="module")
def audio(tmp_path_factory):
    if not REAL.is_dir():
        pytest.skip("../shared/data/librispeech-mini is absent")
    folder = tmp_path_factory.mktemp("audio") / "in"
    folder.mkdir()
    for u in UTTERANCES:
        shutil.copy(REAL / u.split("-")[0] / f"{u}.flac", folder)
    return folder


def _run(args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout + (r.stderr if r.stderr_bytes is not None else "")


def _files(folder: Path) -> dict:
    """Every output file's bytes, except the output manifest (it records the time of writing)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".vpeval-manifest.json"}


# --- anonymize and embed through the CLI --------------------------------------------------------------------


def test_anonymize_and_embed_on_the_cluster_equal_the_single_process_run(scheduler, audio, tmp_path):
    one, many = tmp_path / "one", tmp_path / "many"
    for out, extra in ((one, []), (many, ["--scheduler", scheduler])):
        code, text = _run(["anonymize", audio, out, "--alpha", "utterance", "--seed", "7", "-q", *extra])
        assert code == 0, text
        assert "5/5" not in text  # -q: no progress bar, on the cluster either
    assert _files(one) == _files(many)  # audio bytes and the table
    assert len(_files(many)) == len(UTTERANCES) + 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left
    for out, extra in ((tmp_path / "e1.npz", ["-q"]), (tmp_path / "e2.npz", ["--scheduler", scheduler])):
        code, text = _run(["embed", many, "-o", out, "-e", "mfcc", "-c", "anonymized", *extra])
        assert code == 0, text
        assert ("5/5" in text) == ("-q" not in extra)  # the cluster job's progress bar; -q silences it
    a, b = read_embeddings(tmp_path / "e1.npz"), read_embeddings(tmp_path / "e2.npz")
    assert a.embeddings.tobytes() == b.embeddings.tobytes()
    assert a.utterance_id.tolist() == b.utterance_id.tolist() == sorted(UTTERANCES)
    assert a.speaker_id.tolist() == b.speaker_id.tolist() and a.extractor == b.extractor


def test_embedding_rows_bit_for_bit_in_float64(client, audio):
    ext = MfccStatsExtractor()
    a = embed_folder(audio, ext, quiet=True)
    b = embed_folder(audio, ext, quiet=True, client=client)
    assert a.embeddings.dtype == b.embeddings.dtype == np.float64
    assert a.embeddings.tobytes() == b.embeddings.tobytes()


def test_resemblyzer_on_the_cluster_weights_loaded_once_per_worker(client, audio, tmp_path):
    pytest.importorskip("resemblyzer")
    from vpeval.audio.embed.resemblyzer import ResemblyzerExtractor

    ext = ResemblyzerExtractor()
    assert len(pickle.dumps(ext)) < 1000  # travels as its configuration, not with the encoder's weights
    two = tmp_path / "two"
    two.mkdir()
    for u in UTTERANCES[:2]:
        shutil.copy(audio / f"{u}.flac", two)
    a = embed_folder(two, ext, quiet=True)
    b = embed_folder(two, ext, quiet=True, client=client)
    assert a.embeddings.tobytes() == b.embeddings.tobytes()

    def encoders():
        from vpeval.audio.embed import resemblyzer

        return len(resemblyzer._encoders)

    loaded = client.run(encoders)
    assert set(loaded.values()) <= {0, 1} and sum(loaded.values()) >= 1  # at most one encoder per worker


def test_a_failing_utterance_is_named_and_leaves_no_output(scheduler, audio, tmp_path):
    bad = tmp_path / "in"
    shutil.copytree(audio, bad)
    (bad / "9999-1-0001.flac").write_bytes(b"not audio at all")
    out = tmp_path / "out"
    code, text = _run(["anonymize", bad, out, "-q", "--scheduler", scheduler])
    assert code == 2 and "9999-1-0001.flac" in text
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["in"]  # no partial output anywhere
    code, text = _run(["embed", bad, "-o", tmp_path / "e.npz", "-q", "--scheduler", scheduler])
    assert code == 2 and "9999-1-0001.flac" in text and not (tmp_path / "e.npz").exists()


def test_into_an_existing_folder_files_are_replaced_and_others_kept(client, audio, tmp_path):
    from vpeval.audio.anonymize import anonymize_folder

    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    df = anonymize_folder(audio, out, client=client, quiet=True)
    ref = anonymize_folder(audio, tmp_path / "ref", quiet=True)
    assert df.equals(ref) and (out / "notes.txt").read_text() == "mine"
    assert {k: v for k, v in _files(out).items() if k != "notes.txt"} == _files(tmp_path / "ref")


# --- options -------------------------------------------------------------------------------------------------


def test_execution_options_are_checked(audio, tmp_path, monkeypatch):
    monkeypatch.setattr(cl, "CONNECT_TIMEOUT", 1.0)
    code, text = _run(["embed", audio, "-o", tmp_path / "e.npz", "--scheduler", "tcp://127.0.0.1:9", "-q"])
    assert code == 2 and "no Dask scheduler answered within 1 s" in text and "tcp://127.0.0.1:9" in text
    code, text = _run(["embed", audio, "-o", tmp_path / "e.npz", "--scheduler", "127.0.0.1:8786", "-q"])
    assert code == 2 and "expected a scheduler address such as tcp://host:8786" in text
    code, text = _run(["linkage", tmp_path / "t.csv", "--scheduler", "tcp://127.0.0.1:9", "--workers", "2"])
    assert code == 2 and "mutually exclusive" in text
    code, text = _run(["trials", tmp_path / "e.npz", "-o", tmp_path / "t", "--workers", "0"])
    assert code == 2
    assert not (tmp_path / "e.npz").exists()
    with cl.cluster() as c:
        assert c is None


def _environ(name):
    import os

    return os.environ.get(name)


def test_local_workers_started_and_stopped_by_vpeval():
    with cl.cluster(workers=1) as c:
        info = c.scheduler_info()["workers"]
        assert len(info) == 1 and next(iter(info.values()))["nthreads"] == 1
        assert c.submit(sum, [1, 2]).result() == 3
        # one OpenMP thread as distributed sets it, but glibc's adaptive mmap threshold left on (2x faster McAdams)
        assert set(c.run(_environ, "OMP_NUM_THREADS").values()) == {"1"}
        assert set(c.run(_environ, "MALLOC_TRIM_THRESHOLD_").values()) == {None}
        address = c.scheduler.address
    assert address.startswith("tcp://127.0.0.1:")
    assert c.status == "closed"


@pytest.mark.filterwarnings("ignore:Port .* is already in use")
def test_a_scheduler_without_workers_is_an_error(audio, tmp_path, monkeypatch):
    monkeypatch.setattr(cl, "CONNECT_TIMEOUT", 1.0)
    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None) as bare:
        code, text = _run(["embed", audio, "-o", tmp_path / "e.npz", "--scheduler", bare.scheduler_address, "-q"])
    assert code == 2 and "no worker joined the scheduler within 1 s" in text
    assert not (tmp_path / "e.npz").exists()


# --- 1-to-N on dask arrays -------------------------------------------------------------------------------------


def _synthetic(n_probes=600, n_models=90, dim=24, seed=5):
    rng = np.random.default_rng(seed)
    models = rng.normal(size=(n_models, dim))
    models /= np.linalg.norm(models, axis=1, keepdims=True)
    ti = rng.integers(0, n_models, n_probes)
    probes = models[ti] + 1.2 * rng.normal(size=(n_probes, dim))
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    return probes, models, ti


@pytest.mark.parametrize("mode", ["cross-fit", "cross-fit-strict", "dev"])
def test_linkage_on_a_dask_score_matrix_equals_the_in_memory_result(client, mode):
    probes, models, ti = _synthetic()
    scores = cl.score_matrix(probes, models, client=client)
    assert isinstance(scores, da.Array) and len(scores.chunks[1]) == 1
    kw = dict(speaker_ids=[f"s{j:03d}" for j in range(models.shape[0])], strict_znorm=mode.endswith("strict"),
              chunk_rows=41, n_folds=3)  # each streaming pass is a round trip to the cluster: few folds
    dev = dev_ti = None
    if mode == "dev":
        dprobes, _, dev_ti = _synthetic(300, 90, 24, seed=6)
        dev = score_rows(dprobes, models)
        kw = {"chunk_rows": 29}
    ref = linkage_analysis(score_rows(probes, models), ti, dev, dev_ti, **kw)
    # a different row partition on the cluster (dask blocks of 70 rows, pieces of 41/29 rows inside)
    got = linkage_analysis(scores.rechunk((70, -1)), ti, dev, dev_ti, client=client, **kw)
    assert got.to_dict() == ref.to_dict()
    for name in ("lid", "p_true", "slope", "intercept"):
        assert np.array_equal(getattr(got.lid, name), getattr(ref.lid, name)), name
    assert np.array_equal(got.lid.rank_counts.n_greater, ref.lid.rank_counts.n_greater)
    assert np.array_equal(got.lid.rank_counts.n_tied, ref.lid.rank_counts.n_tied)
    assert np.array_equal(got.identification.gamma, ref.identification.gamma)  # rank histogram
    assert got.identification.rates == ref.identification.rates  # CMC at k


def test_lid_and_scattered_numpy_matrices_on_the_cluster(client, monkeypatch):
    probes, models, ti = _synthetic(450, 60, 16, seed=9)
    llr = 4.0 * score_rows(probes, models)
    llr[3, 5] = np.inf  # the careful path: one +inf in a row
    x1, r1 = lid(llr, ti, return_rank_counts=True, chunk_rows=17)
    monkeypatch.setattr(rowscan, "CLUSTER_MIN_BYTES", 0)  # scatter even this small matrix
    monkeypatch.setattr(rowscan, "DASK_BLOCK_BYTES", 100 * 60 * 8)  # several blocks
    x2, r2 = lid(llr, ti, return_rank_counts=True, chunk_rows=17, client=client)
    assert np.array_equal(x1, x2) and np.array_equal(r1.n_greater, r2.n_greater)
    assert np.array_equal(r1.n_tied, r2.n_tied)
    assert np.array_equal(x1, lid(da.from_array(llr, chunks=(64, 30)), ti, client=client))
    bad = score_rows(probes, models)
    bad[200, 1] = np.nan
    with pytest.raises(ValueError, match="probe row 200"):  # the worker's error, with the global row
        linkage_analysis(bad, ti, client=client)


def test_lid_pipeline_histograms_from_scattered_blocks_equal_in_memory(client, monkeypatch):
    """The calibration's moment histograms: canonical chunks cut by the cluster's blocks and pieces are
    completed on the client, so every fitted number and LID equals the in-memory run exactly."""
    from vpeval.metrics import linkage
    from vpeval.metrics.linkage import histogram

    probes, models, ti = _synthetic(450, 60, 16, seed=12)
    s = np.round(score_rows(probes, models), 1)  # few distinct z-scores: many per bin, so sums depend on order
    monkeypatch.setattr(histogram, "_canonical_rows", lambda n_cols: 25)  # chunks of 25 rows, whole and cut
    ref = linkage.lid_pipeline(None, s, None, ti, n_folds=3, chunk_rows=17)
    monkeypatch.setattr(rowscan, "CLUSTER_MIN_BYTES", 0)
    monkeypatch.setattr(rowscan, "DASK_BLOCK_BYTES", 100 * 60 * 8)  # blocks of 85 rows, pieces of 17
    got = linkage.lid_pipeline(None, s, None, ti, n_folds=3, chunk_rows=17, client=client)
    for name in ("slope", "intercept", "lid", "p_true", "fold"):
        assert np.array_equal(getattr(got, name), getattr(ref, name)), name


def test_population_curves_on_the_cluster_equal_the_in_memory_curves(client, monkeypatch):
    """Issue 50: the population curves' two row scans on a cluster (a scattered NumPy matrix, and a dask array's
    blocks), with the rows z-normalised there, give the in-memory curves of the z-scores bit for bit."""
    from vpeval.metrics.linkage import population_curves
    from vpeval.metrics.linkage import population_rows
    from vpeval.metrics.linkage.population import row_zscores

    probes, models, ti = _synthetic(450, 60, 16, seed=14)
    s = np.round(score_rows(probes, models), 2)  # ties within and across rows
    slope = np.where(np.arange(ti.size) % 3 == 0, 1.7, 2.1)
    kw = dict(slope=slope, speaker=ti, sizes=[2, 10, 60, 5000], n_boot=30, budget_bits=3.0, seed=3)
    ref = population_curves(row_zscores(s), ti, **kw).to_dict()
    monkeypatch.setattr(rowscan, "CLUSTER_MIN_BYTES", 0)
    monkeypatch.setattr(rowscan, "DASK_BLOCK_BYTES", 100 * 60 * 8)
    monkeypatch.setattr(population_rows, "BLOCK_BYTES", 37 * 60 * 8)  # blocks of 37 rows inside the 74-row blocks
    assert population_curves(s, ti, znorm=True, client=client, **kw).to_dict() == ref
    assert population_curves(da.from_array(s, chunks=(64, 30)), ti, znorm=True, client=client, **kw).to_dict() == ref
    # again on the same client and data: the blocks are scattered under keys of each call's own (content-hashed
    # keys were shared with the call before, whose release cancelled this call's tasks: "lost dependencies")
    assert population_curves(s, ti, znorm=True, client=client, **kw).to_dict() == ref
    bad = s.copy()
    bad[400, 2], bad[200, 1] = np.nan, np.inf  # in two blocks: the lowest row is named, whichever block fails first
    for _ in range(3):
        with pytest.raises(ValueError, match="probe row 200"):
            population_curves(bad, ti, client=client, **kw)


def test_linkage_and_trials_cli_on_the_cluster(scheduler, tmp_path, monkeypatch):
    monkeypatch.setattr(rowscan, "CLUSTER_MIN_BYTES", 0)
    emb = ROOT / "examples" / "librispeech-mini" / "embeddings_mfcc.npz"
    outs = {}
    for tag, extra in (("one", []), ("many", ["--scheduler", scheduler])):
        code, text = _run(["trials", emb, "-o", tmp_path / tag, "--types", "oa,aa", "--json", *extra])
        assert code == 0, text
        code, text = _run(["linkage", tmp_path / tag / "one_to_n_oa.csv", "--json", "--separable", "regularize",
                           "--population", "1000", *extra])
        assert code == 0, text
        outs[tag] = json.loads(text)
        assert outs[tag].pop("input")["table"] == str(tmp_path / tag / "one_to_n_oa.csv")
    assert _files(tmp_path / "one") == _files(tmp_path / "many")
    assert outs["one"] == outs["many"] and outs["one"]["lid"]["mode"] == "cross-fit"
    assert outs["one"]["population"]["sizes"][-1] == 1000


def test_one_to_n_of_the_example_on_the_cluster_is_bit_for_bit(client):
    # 256-dim resemblyzer embeddings: with BLAS on two threads, 133 of these 5,550 scores differed from a
    # single-threaded product before score_block pinned BLAS to one thread (workers run one BLAS thread)
    from vpeval.pipeline import build_trials, one_to_n

    es = read_embeddings(ROOT / "examples" / "librispeech-mini" / "embeddings_resemblyzer.npz")
    es = es.select(es.condition != "anonymized@p2")  # the second run enters the cross-profile types only
    for e, p in (("o", "o"), ("o", "a"), ("a", "a")):
        a, b = one_to_n(es, enroll=e, probe=p), one_to_n(es, enroll=e, probe=p, client=client)
        assert a.scores.tobytes() == b.scores.tobytes()
    t1, t2 = build_trials(es, ["oa", "aaaa"]), build_trials(es, ["oa", "aaaa"], client=client)
    for k in t1:
        assert t1[k].tar.tobytes() == t2[k].tar.tobytes() and t1[k].non.tobytes() == t2[k].non.tobytes()


# --- failures of the cluster itself: errors naming the file, never a hang (issue 28) ---------------------------


def test_a_worker_dying_on_a_file_is_an_error_naming_that_file():
    import dask

    def crash_on_b(item):
        import os
        import time

        if item == "b":
            time.sleep(0.5)  # some work on the file (the worker's note of the item it started travels meanwhile)
            os._exit(1)  # what an out-of-memory kill or a crashing library does to the worker process
        return item

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                     dashboard_address=None, silence_logs=50) as local, \
            distributed.Client(local) as c:
        names = ["/data/a.flac", "/data/b.flac", "/data/c.flac"]
        with pytest.raises(cl.WorkerDiedError) as e:
            cl.map_items(c, crash_on_b, ["a", "b", "c"], names=names, batch_size=3, quiet=True)
    msg = str(e.value)
    assert msg.startswith("/data/b.flac: a Dask worker died while processing this file"), msg
    assert "out of memory" in msg and "GiB" in msg and "KilledWorker" not in msg and "_run_batch" not in msg
    assert isinstance(e.value, VpevalError)  # the CLI exits 2 with this message


def test_no_worker_while_items_wait_is_an_error_not_a_hang(monkeypatch):
    import time

    monkeypatch.setattr(cl, "NO_WORKER_TIMEOUT", 1.0)
    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None,
                                  silence_logs=50) as bare, distributed.Client(bare) as c:
        t = time.monotonic()
        with pytest.raises(cl.NoWorkersError, match="no worker for 1 s while 2 of 2 items were waiting"):
            cl.map_items(c, str, [1, 2], quiet=True)
        assert time.monotonic() - t < 10


def test_a_lost_scheduler_is_an_error_not_a_hang(tmp_path):
    import os
    import subprocess
    import sys
    import threading
    import time

    dask_cmd = Path(sys.executable).parent / "dask"
    if not dask_cmd.exists():
        pytest.skip("the dask command is not installed beside this Python")
    sched_file = tmp_path / "scheduler.json"
    sched = subprocess.Popen([dask_cmd, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                              "--scheduler-file", sched_file], stderr=subprocess.DEVNULL)
    worker = None
    try:
        for _ in range(300):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        time.sleep(0.3)
        address = json.loads(sched_file.read_text())["address"]
        worker = subprocess.Popen([dask_cmd, "worker", address, "--nthreads", "1", "--no-nanny"],
                                  stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
        with distributed.Client(address, timeout=20) as c:
            c.wait_for_workers(1, timeout=30)
            threading.Timer(1.0, sched.kill).start()
            t = time.monotonic()
            with pytest.raises(cl.SchedulerLostError, match="connection to the Dask scheduler was lost"):
                cl.map_items(c, time.sleep, [0.5] * 20, names=[f"f{i}.flac" for i in range(20)], batch_size=1,
                             quiet=True)
            assert time.monotonic() - t < 30
    finally:
        for p in (worker, sched):
            if p is not None:
                p.kill()
                p.wait()


def test_a_scheduler_address_that_speaks_http_is_refused_at_once():
    import http.server
    import threading
    import time

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        t = time.monotonic()
        with pytest.raises(cl.ClusterError, match="not a Dask scheduler"):
            with cl.cluster(scheduler=f"tcp://127.0.0.1:{server.server_address[1]}", timeout=1.0):
                pass
        assert time.monotonic() - t < 5
    finally:
        server.shutdown()


def test_more_workers_than_cores_are_refused(audio, tmp_path):
    too_many = cl._cores() + 1
    code, text = _run(["embed", audio, "-o", tmp_path / "e.npz", "--workers", too_many, "-q"])
    assert code == 2 and f"--workers {too_many}: this machine has {cl._cores()} cores" in text
    assert not (tmp_path / "e.npz").exists()


def test_a_full_disk_on_a_worker_reaches_the_client_as_the_oserror(client):
    """Re-raised as OSError with its errno and file (the output claim then exits 3 naming the output), not as
    an ItemError traceback."""
    import errno

    def full(item):
        if item == 2:
            raise OSError(errno.ENOSPC, "No space left on device", "/out/.o.vpeval-tmp-1/x.flac")
        return item

    with pytest.raises(OSError) as e:
        cl.map_items(client, full, [1, 2, 3], batch_size=1, quiet=True)
    assert e.value.errno == errno.ENOSPC and e.value.filename == "/out/.o.vpeval-tmp-1/x.flac"


def test_a_worker_death_in_any_computation_of_a_cluster_block_is_a_cluster_error():
    """Outside map_items (the 1-to-N scans compute dask arrays), a dead worker is an error too, not a traceback."""
    import os

    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with pytest.raises(cl.WorkerDiedError, match="a Dask worker died during the computation .*out of memory"):
            with cl.cluster(workers=1) as c:
                c.submit(os._exit, 1, pure=False).result()
