"""Signal-processing voice anonymizers (waveform in, waveform out) and the driver that anonymizes a folder.

- ``mcadams``: :func:`mcadams`, the McAdams coefficient (VoicePrivacy baseline B2),
  :mod:`vpeval.audio.anonymize.mcadams_coefficient`;
- ``vtln``: :func:`vtln`, WORLD F0 scaling + bilinear envelope warping, :mod:`vpeval.audio.anonymize.world`;
- ``resample``: :func:`resample_shift`, pitch and formant shift by resampling,
  :mod:`vpeval.audio.anonymize.resample`;
- ``asr-tts``: :func:`resynthesize`, the words recognised by Whisper-base and spoken again in one fixed synthetic
  voice (Piper, or espeak-ng), :mod:`vpeval.audio.anonymize.asr_tts`; it imports its engines only when it runs.

:func:`anonymize_folder` runs one of them over an audio folder (or a Kaldi data folder), drawing the
parameters per speaker or utterance from a seed (:mod:`vpeval.audio.anonymize.folder`;
:func:`draw_alpha`, :func:`draw_parameter`).
"""

from __future__ import annotations

from .asr_tts import resynthesize
from .base import draw_parameter
from .folder import METHODS, anonymize_folder, profile_seed, pseudo_speaker
from .mcadams_coefficient import ALPHA_RANGE, DEFAULT_ALPHA, draw_alpha, mcadams, mcadams_pole_angles
from .resample import RESAMPLE_RANGE, resample_shift
from .world import VTLN_F0_RANGE, VTLN_WARP_RANGE, bilinear_warp, vtln

__all__ = [
    "METHODS",
    "anonymize_folder",
    "profile_seed",
    "mcadams",
    "mcadams_pole_angles",
    "draw_alpha",
    "DEFAULT_ALPHA",
    "ALPHA_RANGE",
    "vtln",
    "bilinear_warp",
    "VTLN_WARP_RANGE",
    "VTLN_F0_RANGE",
    "resample_shift",
    "RESAMPLE_RANGE",
    "draw_parameter",
    "resynthesize",
    "pseudo_speaker",
]
