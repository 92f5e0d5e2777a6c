"""Everything that starts from audio: reading, anonymizers, speaker-embedding extractors, speech recognition, F0.

=============================== ==========================================================================
:mod:`vpeval.audio.io`           reading mono FLAC/WAV at any rate as 16 kHz, writing, listing a folder's utterances
:mod:`vpeval.audio.anonymize`    signal-processing anonymizers, one module per method, and the folder driver
:mod:`vpeval.audio.embed`        speaker-embedding extractors (MFCC statistics, resemblyzer, d-vector, model files) and folder extraction
:mod:`vpeval.audio.asr`          speech recognition (faster-whisper), transcript files, sentence embeddings
:mod:`vpeval.audio.pitch`        F0 contours (WORLD DIO + StoneMask)
=============================== ==========================================================================

Importing this package loads none of them; each imports its audio libraries (librosa, soundfile, pyworld,
torch) only when a function needs them. The reading and writing functions lived at
``vpeval.io.audio`` before; that path still imports, with a :class:`~vpeval.errors.VpevalDeprecationWarning`.
The other former paths were removed (CHANGELOG.md).
"""
