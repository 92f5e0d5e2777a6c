"""Report section for utility: word error rate of a speech recogniser per condition and per utterance."""

from __future__ import annotations

from ..metrics.utility import SimilarityResult, WERResult
from .document import Paragraph, Section, Table

__all__ = ["utility_section", "pitch_section"]


def utility_section(results: dict[str, WERResult], *, asr: dict | None = None, baseline: str | None = None,
                    similarity: dict[str, SimilarityResult] | None = None, section_id: str = "utility",
                    title: str = "Utility: word error rate") -> Section:
    """Corpus WER table per condition and per-utterance WER rows.

    Parameters
    ----------
    results : dict
        Condition name (e.g. ``original``, ``anonymized``, a system name) -> :func:`vpeval.metrics.utility.wer`
        result.  All conditions must cover the same utterances.
    asr : dict, optional
        Recogniser settings shown in the text (``FasterWhisperBackend.settings()``).
    baseline : str, optional
        Condition against which the WER change is given in percentage points (default: ``original`` when
        present, else none).
    similarity : dict, optional
        Condition -> :func:`vpeval.metrics.utility.transcript_similarity` of the baseline's transcripts
        with that condition's; shown as a column "semantic similarity to <baseline>" (mean cosine).
    section_id, title : str

    Returns
    -------
    Section
        Blocks: an explanatory paragraph, the corpus table (utterances, reference words, S, D, I, corpus
        WER %, mean per-utterance WER %, change vs the baseline, semantic similarity) and the per-utterance
        table (reference words, then WER % and the normalised hypothesis of every condition, TOTAL row
        last).
        ``data`` holds every count (``conditions``: name -> ``WERResult.to_dict()``), ``asr``,
        ``baseline`` and ``similarity``.

    Raises
    ------
    VpevalError
        No conditions, an unknown ``baseline``, or conditions over different utterances.
    """
    from ..errors import VpevalError

    names = list(results)
    if not names:
        raise VpevalError("utility_section: no conditions")
    if baseline is None and "original" in results:
        baseline = "original"
    if baseline is not None and baseline not in results:
        raise VpevalError(f"utility_section: baseline {baseline!r} is not one of the conditions {names}")
    ids = [u.utterance_id for u in results[names[0]].utterances]
    for n in names[1:]:
        if [u.utterance_id for u in results[n].utterances] != ids:
            raise VpevalError(f"utility_section: condition {n!r} covers other utterances than {names[0]!r}")

    sec = Section(section_id, title)
    norm = sorted({r.normalizer for r in results.values()})
    text = (
        "Word error rate (WER) of a speech recogniser: (substitutions + deletions + insertions) / reference "
        "words, after normalising both texts (" + ", ".join(norm) + " normaliser"
        + ("; Whisper's English rules: lower case, no punctuation, contractions expanded, numbers as digits, "
           "American spellings" if "whisper" in norm else "") + "). "
        "Corpus WER sums the edits and the reference words over all utterances; the unweighted mean of the "
        "per-utterance WERs weighs short utterances more and is shown beside it. Lower is better: a "
        "utility-preserving anonymizer keeps the anonymized WER close to the original one.")
    sec.blocks.append(Paragraph(text))
    if asr:
        sec.blocks.append(Paragraph(
            "Recogniser: {backend}, model {model}, compute type {ct}, beam {beam}, temperature 0, no "
            "conditioning on previous text, {thr} CPU threads (deterministic).".format(
                backend=asr.get("backend", "?"), model=asr.get("model_dir", "?"), ct=asr.get("compute_type", "?"),
                beam=asr.get("beam_size", "?"), thr=asr.get("cpu_threads", "?")), "note"))

    cols = ["condition", "utterances", "ref words", "subst.", "del.", "ins.", "corpus WER (%)",
            "mean utterance WER (%)"]
    if baseline is not None:
        cols.append(f"change vs {baseline} (points)")
    if similarity:
        if baseline is None:
            raise VpevalError("utility_section: similarity needs a baseline condition")
        cols.append(f"semantic similarity to {baseline} (mean cosine)")
    rows = []
    for n in names:
        r = results[n]
        row = [n, len(r.utterances), r.n_ref, r.substitutions, r.deletions, r.insertions, 100 * r.wer,
               100 * r.mean_utterance_wer]
        if baseline is not None:
            row.append(100 * (r.wer - results[baseline].wer))
        if similarity:
            row.append(1.0 if n == baseline else (similarity[n].mean if n in similarity else float("nan")))
        rows.append(row)
    sec.blocks.append(Table(cols, rows, caption="Corpus word error rate per condition", fmt="{:.2f}"))

    urows = []
    for i, uid in enumerate(ids):
        row: list = [uid, results[names[0]].utterances[i].n_ref]
        for n in names:
            u = results[n].utterances[i]
            row += [100 * u.wer, u.hypothesis]
        urows.append(row)
    total: list = ["TOTAL", results[names[0]].n_ref]
    for n in names:
        total += [100 * results[n].wer, ""]
    urows.append(total)
    ucols = ["utterance", "ref words"] + [c for n in names for c in (f"{n} WER (%)", f"{n} hypothesis")]
    sec.blocks.append(Table(ucols, urows, caption="Per-utterance WER (normalised hypotheses; TOTAL = corpus WER)",
                            fmt="{:.1f}"))
    if similarity:
        enc = sorted({s.encoder for s in similarity.values()})
        sec.blocks.append(Paragraph(
            "Semantic similarity: cosine of sentence embeddings (" + ", ".join(enc) + ") of each utterance's "
            f"transcript in a condition and in {baseline}, averaged over utterances; 1 = same direction, "
            "about 0 = unrelated. It shows whether recognition errors change the meaning.", "note"))
    sec.data = {"conditions": {n: results[n].to_dict() for n in names}, "asr": asr, "baseline": baseline,
                "similarity": None if not similarity else {n: s.to_dict() for n, s in similarity.items()}}
    return sec


def pitch_section(result, *, section_id: str = "pitch", title: str = "Utility: pitch correlation") -> Section:
    """rho_F0 (VoicePrivacy 2020 pitch correlation) of original and anonymized speech: mean and per utterance.

    Parameters
    ----------
    result : vpeval.metrics.utility.PitchCorrelationResult
    section_id, title : str

    Returns
    -------
    Section
        An explanatory paragraph, a one-row summary table (utterances, defined, mean rho_F0) and the
        per-utterance table (undefined values shown as NaN). ``data`` is ``result.to_dict()``.
    """
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "Pitch correlation rho_F0 (VoicePrivacy 2020 evaluation plan): per utterance, the Pearson correlation "
        "of the F0 contours of the original and the anonymized version over the frames voiced in both (WORLD "
        "DIO + StoneMask, 10 ms frames), then the mean over utterances. 1 = intonation fully kept; the "
        "challenge asked for a mean above 0.3. Utterances with fewer than two frames voiced in both, or a "
        "constant contour, have no value and are left out of the mean."))
    sec.blocks.append(Table(["utterances", "defined", "mean rho_F0"],
                            [[len(result.utterances), len(result.utterances) - result.n_undefined, result.mean]],
                            caption="Mean pitch correlation", fmt="{:.4f}"))
    sec.blocks.append(Table(["utterance", "rho_F0"], [[u, v] for u, v in result.utterances.items()],
                            caption="Per-utterance pitch correlation", fmt="{:.4f}"))
    sec.data = result.to_dict()
    return sec
