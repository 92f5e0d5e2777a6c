"""Analysis: deciding from computed results. The perfect-secrecy test over every attacker of a system
(:mod:`~vpeval.analysis.secrecy`), the verdict rule and its vocabulary (:mod:`~vpeval.analysis.verdict`), and
the families they are built from for score files, 1-to-N tables and audits. The report layer only renders what
this package decides.
"""

from .secrecy import (
    SCHEMES, WORST_CASE_STATISTICS, ExposedSpeaker, MemberTest, OneToNInput, SecrecyTest,
    TrialInput, WorstCase, secrecy_test, speakers_from_keys,
)

__all__ = ["SCHEMES", "WORST_CASE_STATISTICS", "ExposedSpeaker", "MemberTest", "OneToNInput",
           "SecrecyTest", "TrialInput", "WorstCase", "secrecy_test", "speakers_from_keys"]
