r"""Voice similarity matrices, de-identification (DeID) and gain of voice distinctiveness (G_VD).

Sources: P.-G. Noé, J.-F. Bonastre, D. Matrouf, N. Tomashenko, A. Nautsch, N. Evans, "Speech
pseudonymisation assessment using voice similarity matrices", Interspeech 2020; the VoicePrivacy 2020 and
2022 evaluation plans (Tomashenko et al.), section on voice similarity matrices; Noé et al., "Towards a
unified assessment framework of speech pseudonymisation", Computer Speech & Language 72 (2022). Equation
numbers of those documents are not repeated here (not verified against the originals); the formulas are.

Definitions
-----------
For ``N`` speakers and two conditions ``x``, ``y`` in {o (original), a (anonymized)}, the voice similarity
matrix ``M_xy`` has entries

.. math::

    M_{xy}(A, B) = \sigma\Big(\frac{1}{|P_{AB}|} \sum_{(u, v) \in P_{AB}} \mathrm{LLR}(x_u, y_v)\Big)

where ``P_AB`` are the pairs (utterance ``u`` of speaker ``A`` in condition ``x``, utterance ``v`` of speaker
``B`` in condition ``y``) with ``u != v`` (an utterance is never compared with itself or with its own
anonymized version), ``LLR`` is the **calibrated** log-likelihood ratio (nats) of the pair's score, and
``sigma`` the logistic sigmoid (so entries are in (0, 1); ``entry="llr"`` keeps the mean LLR in nats
instead). The diagonal dominance of a matrix is

.. math::

    D_\mathrm{diag}(M) = \Big|\frac{1}{N}\sum_A M(A, A) - \frac{1}{N(N-1)}\sum_{A \ne B} M(A, B)\Big|

and

.. math::

    \mathrm{DeID} = 1 - \frac{D_\mathrm{diag}(M_{oa})}{D_\mathrm{diag}(M_{oo})}, \qquad
    G_\mathrm{VD} = 10 \log_{10} \frac{D_\mathrm{diag}(M_{aa})}{D_\mathrm{diag}(M_{oo})} \ \mathrm{dB}.

DeID = 1 (100 %): anonymized speech no longer resembles its original speaker more than other speakers;
DeID = 0: as much as the original does. G_VD = 0 dB: anonymized voices are as distinguishable from each other
as the originals; negative: less distinguishable (G_VD -> -inf when every anonymized voice is alike).

Calibration (the correction to the public VoicePAT code)
--------------------------------------------------------
The definition averages *LLRs*. The VoicePAT toolkit (``deid_gvd.py``) computes PAV-calibrated scores but
then averages the *uncalibrated* score column into the matrix (and copies ``M(A, B)`` into ``M(B, A)`` for
the non-symmetric ``M_oa``). vpeval averages calibrated LLRs and fills every entry from its own pairs.
Options (``calibration``):

* ``"pav-laplace"`` (default): PAV with Laplace smoothing at the end points (privacy-ZEBRA convention; every
  LLR finite), as VoicePAT intends. Plain PAV is not offered: its +-inf LLRs make means undefined.
* ``"logistic"``: affine logistic-regression calibration (:class:`~vpeval.calibration.LogisticCalibrator`,
  unpenalised; separable training scores raise an error).
* ``"none"``: raw scores averaged (VoicePAT's behaviour), for comparison only: the result then depends on the
  score scale.

``fit_on``: ``"each"`` (default) fits one calibrator per matrix on that matrix's own same-speaker
(target) and different-speaker (non-target) pairs; ``"oo"`` fits one calibrator on the ``oo`` pairs and
applies it to all three matrices. ``"each"`` is the default because an anonymized condition shifts the
whole score distribution: a map fitted on ``oo`` then turns that shift into large, nearly equal LLRs (for
example every ``oa`` pair very negative) and D_diag mixes the shift with the speaker evidence; fitted on
its own pairs, each matrix expresses the evidence an informed attacker of that condition extracts (an
optimistic, worst-case view, as with privacy-ZEBRA). ``"oo"`` answers a different question: what an
attacker calibrated on original speech concludes.

Counting pairs: each unordered pair of ``oo`` and ``aa`` enters the calibration twice (by default)
-------------------------------------------------------------------------------------------------------
Every matrix is built from the *ordered* pairs ``(u, v)``, ``u != v``, of its two conditions. For ``oa`` these
are ``n (n - 1)`` distinct trials (``(u_o, v_a)`` and ``(v_o, u_a)`` compare different recordings). For ``oo``
and ``aa`` the score is symmetric, so ``(u, v)`` and ``(v, u)`` are the same trial and every unordered pair
enters the calibrator's training data twice (``pairs="ordered"``, the default). The matrix entries do not
depend on this (a mean over both orders equals the mean over one), and neither would plain PAV or the
unpenalised logistic fit (both are invariant to duplicating every trial). Laplace-smoothed PAV is not: its
four pseudo-trials weigh half as much against doubled counts, so the LLRs move a little. Why the double
count is kept as the default: it gives the three matrices the same number of training trials,
``n (n - 1)``, so the pseudo-trials weigh the same in ``oo``, ``oa`` and ``aa``, and an anonymizer that
changes nothing (``anonymized == original``) gets exactly DeID = 0 and G_VD = 0 dB. Counting each unordered
pair once (``pairs="unordered"``: ``oo`` and ``aa`` calibrated on ``n (n - 1) / 2`` trials, ``oa`` on its
``n (n - 1)``) breaks that: on three speakers with two utterances each and separable scores it gives DeID =
-5/29 for the identity anonymizer (``tests/test_distinctiveness.py`` computes both by hand). On the bundled
example the two readings differ by at most about 0.0015 in DeID and 0.03 dB in G_VD.

Scores are cosine similarities of L2-normalised utterance embeddings. Memory is O(n^2) for ``n`` utterances
(one score matrix per condition pair).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from .._checks import one_of
from ..calibration import LogisticCalibrator, PAVCalibrator
from ..errors import DegenerateInputWarning, VpevalError

__all__ = [
    "DistinctivenessError",
    "diagonal_dominance",
    "deid",
    "gvd",
    "similarity_matrix",
    "VoiceSimilarity",
    "voice_distinctiveness",
]

CALIBRATIONS = ("pav-laplace", "logistic", "none")
PAIR_COUNTS = ("ordered", "unordered")


class DistinctivenessError(VpevalError):
    """Matrices, embeddings or options do not allow DeID / G_VD to be computed."""


def _square(M, name: str) -> np.ndarray:
    try:
        M = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DistinctivenessError(f"{name}: expected a numeric matrix ({exc})") from None
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise DistinctivenessError(f"{name}: expected a square matrix of at least 2 x 2, got shape {M.shape}")
    if not np.isfinite(M).all():
        raise DistinctivenessError(f"{name}: contains NaN or inf")
    return M


def diagonal_dominance(M) -> float:
    """``D_diag(M) = |mean of the diagonal - mean of the off-diagonal entries|`` (module docstring).

    Parameters
    ----------
    M : array_like of shape (N, N), N >= 2, finite

    Raises
    ------
    DistinctivenessError
        Not square, smaller than 2 x 2, NaN or inf.

    Examples
    --------
    >>> diagonal_dominance([[0.9, 0.2], [0.4, 0.7]])
    0.5
    """
    M = _square(M, "M")
    n = M.shape[0]
    d = np.trace(M) / n
    off = (M.sum() - np.trace(M)) / (n * (n - 1))
    return float(abs(d - off))


def deid(m_oo, m_oa) -> float:
    """De-identification ``1 - D_diag(M_oa) / D_diag(M_oo)`` (unitless; 1 = fully de-identified).

    Raises
    ------
    DistinctivenessError
        ``D_diag(M_oo) = 0`` (original speakers are not distinguishable: DeID undefined), or bad matrices.

    Examples
    --------
    >>> deid([[0.9, 0.1], [0.1, 0.9]], [[0.5, 0.3], [0.3, 0.5]])
    0.75
    """
    d_oo = diagonal_dominance(m_oo)
    if d_oo == 0:
        raise DistinctivenessError("D_diag(M_oo) = 0: original voices are not distinguishable, DeID is undefined")
    return float(1.0 - diagonal_dominance(m_oa) / d_oo)


def gvd(m_oo, m_aa) -> float:
    """Gain of voice distinctiveness ``10 log10(D_diag(M_aa) / D_diag(M_oo))`` in dB.

    ``D_diag(M_aa) = 0`` gives ``-inf`` with a :class:`~vpeval.errors.DegenerateInputWarning`.

    Raises
    ------
    DistinctivenessError
        ``D_diag(M_oo) = 0``, or bad matrices.

    Examples
    --------
    >>> round(gvd([[0.9, 0.1], [0.1, 0.9]], [[0.5, 0.42], [0.42, 0.5]]), 6)
    -10.0
    """
    d_oo = diagonal_dominance(m_oo)
    if d_oo == 0:
        raise DistinctivenessError("D_diag(M_oo) = 0: original voices are not distinguishable, G_VD is undefined")
    d_aa = diagonal_dominance(m_aa)
    if d_aa == 0:
        warnings.warn("D_diag(M_aa) = 0: anonymized voices are indistinguishable, G_VD = -inf dB",
                      DegenerateInputWarning, stacklevel=2)
        return -math.inf
    return float(10.0 * math.log10(d_aa / d_oo))


def similarity_matrix(values, row_speaker, col_speaker, speakers, *, entry: str = "sigmoid") -> np.ndarray:
    """Average pair values into a speaker-by-speaker matrix.

    Parameters
    ----------
    values : array_like of float, shape (n_pairs,)
        Calibrated LLRs (nats) of the pairs (or raw scores for ``calibration="none"``).
    row_speaker, col_speaker : array_like of str, shape (n_pairs,)
        Speaker of the first (row) and second (column) utterance of each pair.
    speakers : array_like of str, shape (N,)
        Row/column order.
    entry : {"sigmoid", "llr"}
        ``sigmoid(mean)`` (the published definition) or the mean itself.

    Returns
    -------
    ndarray of shape (N, N)

    Raises
    ------
    DistinctivenessError
        A speaker pair without any pair of utterances, an unknown speaker, NaN, a bad ``entry``.

    Examples
    --------
    >>> similarity_matrix([2.0, 0.0, -2.0, -4.0, 1.0], ["a", "a", "a", "b", "b"], ["a", "a", "b", "a", "b"],
    ...                   ["a", "b"], entry="llr").tolist()
    [[1.0, -2.0], [-4.0, 1.0]]
    """
    if entry not in ("sigmoid", "llr"):
        raise DistinctivenessError(f"entry must be 'sigmoid' or 'llr', got {entry!r}")
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or np.isnan(v).any():
        raise DistinctivenessError("values must be a 1-D array without NaN")
    spk = np.asarray(speakers).astype(str)
    if spk.ndim != 1 or np.unique(spk).size != spk.size:
        raise DistinctivenessError("speakers must be a 1-D array of distinct ids")
    index = {s: i for i, s in enumerate(spk.tolist())}
    try:
        r = np.array([index[s] for s in np.asarray(row_speaker).astype(str).tolist()], dtype=np.intp)
        c = np.array([index[s] for s in np.asarray(col_speaker).astype(str).tolist()], dtype=np.intp)
    except KeyError as exc:
        raise DistinctivenessError(f"pair speaker {exc.args[0]!r} is not in speakers") from None
    if r.shape != v.shape or c.shape != v.shape:
        raise DistinctivenessError("values, row_speaker and col_speaker must have the same length")
    return _block_matrix(v, r, c, spk, entry)


def _block_matrix(v: np.ndarray, r: np.ndarray, c: np.ndarray, spk: np.ndarray, entry: str) -> np.ndarray:
    """Mean of ``v`` per (row code, column code) block, then ``entry``; codes index ``spk``."""
    n = spk.size
    flat = r * n + c
    counts = np.bincount(flat, minlength=n * n).reshape(n, n)
    if (counts == 0).any():
        i, j = np.argwhere(counts == 0)[0]
        raise DistinctivenessError(f"no utterance pair for speakers ({spk[i]!r}, {spk[j]!r})")
    if np.isinf(v).any():
        pos = np.bincount(flat, weights=(v == np.inf), minlength=n * n) > 0
        neg = np.bincount(flat, weights=(v == -np.inf), minlength=n * n) > 0
        if (pos & neg).any():
            raise DistinctivenessError("a matrix entry averages +inf and -inf LLRs; use a smoothed calibration")
        fin = np.where(np.isfinite(v), v, 0.0)
        mean = np.bincount(flat, weights=fin, minlength=n * n) / counts.reshape(-1)
        mean = np.where(pos, np.inf, np.where(neg, -np.inf, mean)).reshape(n, n)
    else:
        mean = (np.bincount(flat, weights=v, minlength=n * n) / counts.reshape(-1)).reshape(n, n)
    return expit(mean) if entry == "sigmoid" else mean


@dataclass
class VoiceSimilarity:
    """Result of :func:`voice_distinctiveness`.

    Attributes
    ----------
    speakers : ndarray of str, shape (N,)
    m_oo, m_oa, m_aa : ndarray of shape (N, N)
        Voice similarity matrices (rows: first condition, columns: second condition).
    d_oo, d_oa, d_aa : float
        Their diagonal dominances (same unit as the entries).
    deid : float
        Unitless, 1 = fully de-identified, 0 = as identifiable as the original (can be negative).
    gvd_db : float
        Decibels; 0 = distinctiveness preserved.
    calibration, fit_on, entry : str
    n_utterances : int
        Utterances per condition used.
    pairs : str
        ``"ordered"`` (each unordered ``oo``/``aa`` pair in the calibration fit twice) or ``"unordered"``
        (once); module docstring.
    """

    speakers: np.ndarray
    m_oo: np.ndarray
    m_oa: np.ndarray
    m_aa: np.ndarray
    d_oo: float
    d_oa: float
    d_aa: float
    deid: float
    gvd_db: float
    calibration: str
    fit_on: str
    entry: str
    n_utterances: int
    pairs: str = "ordered"

    def to_dict(self) -> dict:
        return {"speakers": self.speakers.tolist(), "m_oo": self.m_oo.tolist(), "m_oa": self.m_oa.tolist(),
                "m_aa": self.m_aa.tolist(), "d_diag": {"oo": self.d_oo, "oa": self.d_oa, "aa": self.d_aa},
                "deid": self.deid, "gvd_db": self.gvd_db, "calibration": self.calibration,
                "fit_on": self.fit_on, "entry": self.entry, "n_utterances": self.n_utterances,
                "pairs": self.pairs,
                "ideal": {"deid": 1.0, "gvd_db": 0.0}}


def _unit(X: np.ndarray, what: str) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if not (norms > 0).all():
        raise DistinctivenessError(f"a {what} embedding is the zero vector; cosine scoring is undefined")
    return X / norms


def _calibrator(name: str):
    if name == "pav-laplace":
        return PAVCalibrator(laplace=True)
    if name == "logistic":
        return LogisticCalibrator()
    return None


def voice_distinctiveness(
    original,
    anonymized,
    speaker_ids,
    utterance_ids=None,
    *,
    calibration: str = "pav-laplace",
    fit_on: str = "each",
    entry: str = "sigmoid",
    pairs: str = "ordered",
) -> VoiceSimilarity:
    """Voice similarity matrices ``M_oo``, ``M_oa``, ``M_aa``, DeID and G_VD from utterance embeddings.

    Parameters
    ----------
    original, anonymized : array_like of shape (n, d)
        Row ``i`` of each is the same utterance (original and anonymized version).
    speaker_ids : array_like of str, shape (n,)
        Every speaker needs at least 2 utterances (the diagonal excludes self-pairs); at least 2 speakers.
    utterance_ids : array_like of str, shape (n,), optional
        Distinct ids (default: row numbers); pairs of an utterance with itself (any condition) are excluded.
    calibration : {"pav-laplace", "logistic", "none"}
    fit_on : {"each", "oo"}
    entry : {"sigmoid", "llr"}
        See the module docstring.
    pairs : {"ordered", "unordered"}
        Training trials of the ``oo`` and ``aa`` calibrators: every ordered pair (default; each unordered pair
        twice, as many trials as ``oa``) or each unordered pair once. Matters only for ``"pav-laplace"``;
        the matrices' means use every ordered pair either way (module docstring, "Counting pairs").

    Returns
    -------
    VoiceSimilarity

    Raises
    ------
    DistinctivenessError
        Shape mismatch, NaN, a speaker with one utterance, fewer than 2 speakers, duplicate utterance ids,
        zero embeddings, unknown options, ``D_diag(M_oo) = 0``.
    vpeval.errors.SeparableScoresError
        ``calibration="logistic"`` on separable training scores.

    Notes
    -----
    The result does not depend on the row order: speakers are sorted and every entry is a mean over a set of
    pairs; the calibrators are order-invariant.
    """
    one_of(calibration, "calibration", CALIBRATIONS, DistinctivenessError)
    if fit_on not in ("each", "oo"):
        raise DistinctivenessError(f"fit_on must be 'each' or 'oo', got {fit_on!r}")
    if entry not in ("sigmoid", "llr"):
        raise DistinctivenessError(f"entry must be 'sigmoid' or 'llr', got {entry!r}")
    one_of(pairs, "pairs", PAIR_COUNTS, DistinctivenessError)
    try:
        O = np.asarray(original, dtype=np.float64)
        A = np.asarray(anonymized, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DistinctivenessError(f"embeddings must be numeric ({exc})") from None
    if O.ndim != 2 or O.shape != A.shape or O.shape[0] == 0:
        raise DistinctivenessError(
            f"original and anonymized must be 2-D arrays of the same shape, got {O.shape} and {A.shape}")
    if not (np.isfinite(O).all() and np.isfinite(A).all()):
        raise DistinctivenessError("embeddings contain NaN or inf")
    n = O.shape[0]
    spk = np.asarray(speaker_ids).astype(str)
    if spk.shape != (n,):
        raise DistinctivenessError(f"speaker_ids must have shape ({n},), got {spk.shape}")
    utt = np.arange(n).astype(str) if utterance_ids is None else np.asarray(utterance_ids).astype(str)
    if utt.shape != (n,):
        raise DistinctivenessError(f"utterance_ids must have shape ({n},), got {utt.shape}")
    if np.unique(utt).size != n:
        raise DistinctivenessError("utterance_ids must be distinct (one row per utterance)")
    speakers, codes, counts = np.unique(spk, return_inverse=True, return_counts=True)
    if speakers.size < 2:
        raise DistinctivenessError(f"voice similarity matrices need at least 2 speakers, got {speakers.size}")
    if (counts < 2).any():
        raise DistinctivenessError(
            f"speaker {str(speakers[counts < 2][0])!r} has a single utterance; every speaker needs at least 2 "
            "(select the speakers with several utterances first)")
    Ou, Au = _unit(O, "original"), _unit(A, "anonymized")
    iu, ju = np.nonzero(~np.eye(n, dtype=bool))  # all ordered pairs of distinct utterances
    row_code, col_code = codes[iu], codes[ju]
    target = row_code == col_code
    scores = {
        # the transposes are copied so that every product goes through the same general matrix product:
        # numpy computes ``A @ A.T`` with a symmetric kernel whose rounding differs, and equal inputs must
        # give bit-identical scores (a PAV map is a step function)
        "oo": (Ou @ Ou.T.copy())[iu, ju],
        "oa": (Ou @ Au.T.copy())[iu, ju],
        "aa": (Au @ Au.T.copy())[iu, ju],
    }
    # trials each calibrator is fitted on: all ordered pairs, or (pairs="unordered") each symmetric oo/aa pair once
    once = iu < ju
    fit_rows = {k: once if (pairs == "unordered" and k != "oa") else np.ones_like(once) for k in scores}
    if calibration == "none":
        values = scores
    elif fit_on == "oo":
        m = fit_rows["oo"]
        cal = _calibrator(calibration).fit(scores["oo"][target & m], scores["oo"][~target & m])
        values = {k: cal.transform(s) for k, s in scores.items()}
    else:
        values = {k: _calibrator(calibration).fit(s[target & fit_rows[k]], s[~target & fit_rows[k]]).transform(s)
                  for k, s in scores.items()}
    mats = {k: _block_matrix(v, row_code, col_code, speakers, entry) for k, v in values.items()}
    d = {k: diagonal_dominance(m) for k, m in mats.items()}
    return VoiceSimilarity(
        speakers=speakers, m_oo=mats["oo"], m_oa=mats["oa"], m_aa=mats["aa"], d_oo=d["oo"], d_oa=d["oa"],
        d_aa=d["aa"], deid=deid(mats["oo"], mats["oa"]), gvd_db=gvd(mats["oo"], mats["aa"]),
        calibration=calibration, fit_on=fit_on, entry=entry, n_utterances=n, pairs=pairs,
    )
