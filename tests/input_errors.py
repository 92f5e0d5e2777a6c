"""A test helper shared by the reader tests: a file's text and the InputFileError its reader must raise."""

from __future__ import annotations

import pytest

from vpeval.errors import InputFileError


def expect_input_error(read, path, text: str, match: str):
    """Write ``text`` to ``path``, then check that ``read(path)`` raises InputFileError matching ``match``.

    ``match`` is a regular expression searched in the message (as :func:`pytest.raises` does); the
    ExceptionInfo is returned for further checks.
    """
    path.write_text(text)
    with pytest.raises(InputFileError, match=match) as info:
        read(path)
    return info
