"""Warnings raised during an audit name the system, attacker or extractor they come from, each once (issue 22's
hostile run: `vpeval demo` printed the same Procrustes warning five times, naming no system)."""

from __future__ import annotations

import warnings

import numpy as np
import typer

import vpeval.pipeline.audit as audit_mod
from vpeval.errors import DegenerateInputWarning
from vpeval.io.embeddings import EmbeddingSet


def _set(seed: int, n_spk: int = 6, n_utt: int = 4, dim: int = 8) -> EmbeddingSet:
    rng = np.random.default_rng(seed)
    spk = np.repeat([f"s{i}" for i in range(n_spk)], n_utt)
    utt = np.array([f"{s}-{k}" for s, k in zip(spk, np.tile(np.arange(n_utt), n_spk))])
    centre = {s: rng.normal(size=dim) for s in np.unique(spk)}
    orig = np.array([centre[s] + 0.5 * rng.normal(size=dim) for s in spk])
    anon = orig + rng.normal(size=orig.shape)
    return EmbeddingSet(np.vstack([orig, anon]), np.r_[utt, utt], np.r_[spk, spk],
                        np.r_[["original"] * utt.size, ["anonymized"] * utt.size], "toy")


def test_audit_warnings_name_their_source_once(monkeypatch):
    def structure(es, seed=0):  # the analysis warns the same words for every system, as Procrustes did
        warnings.warn("Procrustes: 20 training pairs for dimension 8", DegenerateInputWarning)
        raise audit_mod.VpevalError("not computed in this test")

    real_one_to_n = audit_mod.analyse_one_to_n

    def one_to_n(m, **kw):  # a cached analysis (the same oo matrix for both systems): computed once
        warnings.warn("a linkage note", DegenerateInputWarning)
        return real_one_to_n(m, **kw)

    monkeypatch.setattr(audit_mod, "analyse_embedding_structure", structure)
    monkeypatch.setattr(audit_mod, "analyse_one_to_n", one_to_n)
    systems = {"A": {"toy": _set(0)}, "B": {"toy": _set(1)}}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        audit_mod.run_audits(systems, backends=("cosine",), types=("oo", "oa", "aa"), n_boot=5, n_perm=5,
                             group_by=None)
    ours = [str(w.message) for w in rec if issubclass(w.category, DegenerateInputWarning)]
    assert ours.count("systems 'A', 'B': extractor 'toy': Procrustes: 20 training pairs for dimension 8") == 1, ours
    # once per system and attacker, however many matrices; the cached oo analysis of B says it again for B
    assert ours.count("systems 'A', 'B': attacker 'toy/cosine': a linkage note") == 1, ours
    assert not [m for m in ours if not m.startswith(("system 'A': ", "system 'B': ", "systems 'A', 'B': "))], ours


def test_warnings_of_one_system_name_it_and_an_error_still_lets_them_out(monkeypatch):
    calls = []

    def structure(es, seed=0):
        calls.append(1)
        warnings.warn(f"call {len(calls)}", DegenerateInputWarning)
        if len(calls) == 2:
            raise RuntimeError("boom")
        raise audit_mod.VpevalError("not computed in this test")

    monkeypatch.setattr(audit_mod, "analyse_embedding_structure", structure)
    systems = {"A": {"toy": _set(0)}, "B": {"toy": _set(1)}}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            audit_mod.run_audits(systems, backends=("cosine",), types=("oo", "oa"), n_boot=5, n_perm=5,
                                 group_by=None)
        except RuntimeError:
            pass
        else:
            raise AssertionError("the error must propagate")
    ours = [str(w.message) for w in rec if issubclass(w.category, DegenerateInputWarning)]
    assert ours == ["system 'A': extractor 'toy': call 1", "system 'B': extractor 'toy': call 2"], ours


def test_cli_hook_prints_each_warning_once_per_run():
    """The CLI's warning hook prints a text raised from several places (or several times) once per run."""
    from typer.testing import CliRunner

    from vpeval.cli.common import install_warning_hook

    app = typer.Typer()

    @app.command()
    def run(ctx: typer.Context, n: int = 3):
        install_warning_hook(ctx)
        for i in range(n):  # the same words from different lines and categories
            warnings.warn("Procrustes: underdetermined", DegenerateInputWarning)
            warnings.warn_explicit("Procrustes: underdetermined", DegenerateInputWarning, f"f{i}.py", i)
        warnings.warn("another note", DegenerateInputWarning)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        r = CliRunner().invoke(app, ["--n", "3"])
    assert r.exit_code == 0, r.output
    assert r.output.count("vpeval: warning: Procrustes: underdetermined") == 1, r.output
    assert r.output.count("vpeval: warning: another note") == 1
