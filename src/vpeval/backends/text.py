"""A text verifier's representation: word and character n-gram TF-IDF vectors of transcripts.

The content attacker (:mod:`vpeval.pipeline.channels`) asks whether two utterances were said by one speaker
from *what* was said.  :class:`TextVectorizer` maps each transcript to an L2-normalised TF-IDF vector: word
uni- and bigrams and character 2-4-grams within word boundaries (scikit-learn's ``TfidfVectorizer``,
``sublinear_tf=True``, smoothed IDF), the two blocks weighted equally and the whole row normalised again, so
that the plain cosine of two rows is the text similarity (Salton & Buckley, "Term-weighting approaches in
automatic text retrieval", IP&M 24(5), 1988).  The vocabulary and the IDF weights are fitted on the
*training speakers'* transcripts only, never on evaluation text, exactly as a voice back-end is trained.

Every row gets one more coordinate, the constant ``EMPTY_WEIGHT`` (1e-3) before the final normalisation, so
that an empty transcript (nothing recognised) is a unit vector too (vpeval's protocols refuse zero vectors): two
empty transcripts score 1, an empty and a non-empty one about 1e-3, and between non-empty texts the extra
coordinate changes the cosine by at most 1e-6.

Text is normalised before counting: lower case, Unicode letters, digits and apostrophes kept, everything else a
space (so ``"Hello, World!"`` and ``"hello world"`` are one text).
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import VpevalError

__all__ = ["TextVectorizer", "normalise_text", "EMPTY_WEIGHT"]

#: The constant extra coordinate of every row (module doc).
EMPTY_WEIGHT = 1e-3

_NON_WORD = re.compile(r"[^\w']+|_")


def normalise_text(text: str) -> str:
    """Lower case, letters/digits/apostrophes kept, runs of anything else one space, stripped.

    >>> normalise_text("  Hello, WORLD! It's 3-D_ok ")
    "hello world it's 3 d ok"
    """
    return " ".join(_NON_WORD.sub(" ", str(text).lower()).split())


class TextVectorizer:
    """Word + character n-gram TF-IDF, fitted on training transcripts (module doc).

    Parameters
    ----------
    max_word_features, max_char_features : int
        Vocabulary caps (the most frequent n-grams of the training text; ties broken by scikit-learn's
        alphabetical order, so the vocabulary does not depend on the order of the training texts).
    min_df : int
        An n-gram must occur in at least this many training transcripts.

    Attributes
    ----------
    dim_ : int
        Output dimension (after :meth:`fit`): the word and character vocabularies plus one.
    n_training_texts_ : int
    """

    def __init__(self, *, max_word_features: int = 2048, max_char_features: int = 2048, min_df: int = 1):
        for name, v in (("max_word_features", max_word_features), ("max_char_features", max_char_features),
                        ("min_df", min_df)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise VpevalError(f"{name} must be an integer >= 1, got {v!r}")
        self.max_word_features = int(max_word_features)
        self.max_char_features = int(max_char_features)
        self.min_df = int(min_df)
        self._word = self._char = None

    def settings(self) -> dict:
        """The settings, for reports."""
        return {"word_ngrams": [1, 2], "char_ngrams": [2, 4], "max_word_features": self.max_word_features,
                "max_char_features": self.max_char_features, "min_df": self.min_df, "sublinear_tf": True}

    def fit(self, texts) -> "TextVectorizer":
        """Fit the vocabularies and IDF weights on training transcripts.

        Parameters
        ----------
        texts : iterable of str
            At least two, not all empty after normalisation.

        Raises
        ------
        VpevalError
            Fewer than two texts, or no n-gram at all in them.
        """
        from sklearn.feature_extraction.text import TfidfVectorizer

        docs = sorted(normalise_text(t) for t in texts)  # sorted: the fit cannot depend on the input order
        if len(docs) < 2:
            raise VpevalError(f"the text vectorizer needs at least two training transcripts, got {len(docs)}")
        if not any(docs):
            raise VpevalError("every training transcript is empty: nothing to fit the text vectorizer on")
        common = dict(lowercase=False, sublinear_tf=True, min_df=self.min_df, dtype=np.float64)
        self._word = TfidfVectorizer(analyzer="word", ngram_range=(1, 2), token_pattern=r"(?u)[\w']+",
                                     max_features=self.max_word_features, **common)
        self._char = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), max_features=self.max_char_features,
                                     **common)
        try:
            self._word.fit(docs)
            self._char.fit(docs)
        except ValueError as exc:  # scikit-learn: empty vocabulary
            raise VpevalError(f"the training transcripts give no n-gram to count ({exc})") from None
        self.dim_ = len(self._word.vocabulary_) + len(self._char.vocabulary_) + 1
        self.n_training_texts_ = len(docs)
        return self

    def transform(self, texts) -> np.ndarray:
        """TF-IDF rows of ``texts``: shape ``(n, dim_)``, float64, each row of unit norm.

        Raises
        ------
        VpevalError
            Not fitted.
        """
        if self._word is None:
            raise VpevalError("TextVectorizer.transform before fit")
        docs = [normalise_text(t) for t in texts]
        if not docs:
            return np.zeros((0, self.dim_))
        w = self._word.transform(docs).toarray()
        c = self._char.transform(docs).toarray()
        x = np.hstack([w, c, np.full((len(docs), 1), EMPTY_WEIGHT)])
        return x / np.linalg.norm(x, axis=1, keepdims=True)
