"""Error and warning types of vpeval.

Every error raised for bad user input is a :class:`VpevalError`, a subclass of
:class:`ValueError`, so ``except ValueError`` keeps working for callers that do
not know vpeval.  Warnings are subclasses of :class:`VpevalWarning`.
"""

from __future__ import annotations

__all__ = [
    "VpevalError",
    "InputFileError",
    "InvalidScoresError",
    "SeparableScoresError",
    "VpevalWarning",
    "VpevalDeprecationWarning",
    "DegenerateInputWarning",
    "FewPermutationsWarning",
    "FewTrainingSpeakersWarning",
    "RepeatedTrialsWarning",
    "ExtractorRecordWarning",
    "SmallSampleWarning",
    "ExtrapolationWarning",
    "SegmentOvershootWarning",
]


class VpevalError(ValueError):
    """Base class of every error vpeval raises for bad input."""


class InputFileError(VpevalError):
    """A file could not be read as the expected format.

    The message starts with ``path:line:`` (or ``path:`` when no single line is
    at fault) so that editors and terminals can jump to the place.

    Attributes
    ----------
    path : str
        The file at fault.
    line : int or None
        1-based line number, or ``None`` when the problem is not one line.
    problem : str
        What was wrong and what was expected.
    """

    def __init__(self, path, line, problem):
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class InvalidScoresError(VpevalError):
    """Arrays passed to a metric are empty, not 1-D, or contain NaN."""


class SeparableScoresError(VpevalError):
    """Target and non-target training scores are perfectly separable.

    Maximum-likelihood logistic regression has no finite optimum then (the
    slope runs to infinity), so no calibration is returned.
    """


class VpevalWarning(UserWarning):
    """Base class of vpeval's warnings."""


class VpevalDeprecationWarning(VpevalWarning, FutureWarning):
    """A deprecated import path or name was used; the message says what replaces it.

    A :class:`FutureWarning`, not a :class:`DeprecationWarning`: Python's default filters hide a
    ``DeprecationWarning`` outside ``__main__`` (a library, a notebook helper, a script importing a module that
    imports the old path), and the people who must change their imports are the users of such code, so the
    warning is shown under the default filters wherever it is raised (the convention of :mod:`warnings` for
    deprecations aimed at end users)."""


class DegenerateInputWarning(VpevalWarning):
    """Input is legal but degenerate (e.g. a result is infinite by construction)."""


class FewPermutationsWarning(VpevalWarning):
    """Too few permutations: the smallest reachable p-value ``1 / (n_perm + 1)`` is above the level at which
    a verdict is drawn, so no result can ever be called a leak (or above baseline)."""


class FewTrainingSpeakersWarning(VpevalWarning):
    """A back-end's statistics rest on very few speakers (PLDA fitted on fewer than 10 training speakers, an
    AS-norm cohort of fewer than 10): legal, but its scores are unreliable; the message names the back-end and
    the count."""


class RepeatedTrialsWarning(VpevalWarning):
    """A score file without trial ids (``score label``, or columns without ``key_cols``) repeats a (score,
    label) pair. Accepted, each line being a trial: without ids, distinct trials that score alike (rounded
    scores, a quantised back-end) look the same as a line or a file given twice by mistake, which vpeval cannot
    tell apart. Files with ids refuse a repeated (enroll, test) pair instead."""


class ExtractorRecordWarning(VpevalWarning):
    """Embedding rows were joined of which only some record their extractor (model file, features, version;
    :mod:`vpeval.io.extractor_info`): the joined rows keep no record, since one record no longer describes them
    all."""


class SmallSampleWarning(VpevalWarning):
    """An estimate rests on too few trials to mean what its definition says: a histogram estimator biased well
    away from its value at these counts (linkability ``D<->sys`` below
    :data:`vpeval.metrics.verification.LINKABILITY_MIN_PER_BIN` trials per bin of the sparser class). The
    message says which estimate, the rule and where it comes from; the value is still returned, with a caveat
    beside it in the JSON and the report."""


class SegmentOvershootWarning(VpevalWarning):
    """A Kaldi ``segments`` line ends after its recording by at most
    :data:`vpeval.io.kaldi_segments.MAX_OVERSHOOT_SECONDS`: the segment is read to the recording's end, as Kaldi's
    ``extract-segments --max-overshoot`` does (segment times rounded when written often end a few milliseconds
    late). The message names the file, the line and both ends."""


class MemoryEstimateWarning(VpevalWarning):
    """The memory a command is estimated to need (:func:`vpeval.cli.memory.check_score_input`) exceeds what it may
    use now: it may run out of memory (exit code 4). The message names the inputs, the estimate and the room."""


class ExtrapolationWarning(VpevalWarning):
    """A model's extrapolation misses what the data measure: the population curves' impostor model, fitted on a
    quarter of the enrolled speakers, differs from the measured curves by more than
    :data:`vpeval.metrics.linkage.population.CHECK_RANK1` (rank-1) or
    :data:`~vpeval.metrics.linkage.population.CHECK_ALID_BITS` (ALID), so the rows beyond the data are not to be
    relied on. The message gives both differences."""


class UndefinedPitchCorrelationWarning(VpevalWarning):
    """A pitch correlation is undefined (fewer than two frames voiced in both contours, or a constant
    contour over them) and is returned as NaN."""


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called by the function that calls this, name the first
    line outside vpeval: for warnings raised deep in computations written as steps (generators advanced by
    :func:`vpeval.pipeline.jobs.drive`), where a fixed stacklevel would name vpeval's own frames. 2 (the caller's
    caller) when every frame is vpeval's."""
    import inspect
    import os

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = inspect.currentframe().f_back.f_back, 2  # the frame that warns is level 1
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(package):
            return level
        frame, level = frame.f_back, level + 1
    return 2
