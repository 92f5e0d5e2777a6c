"""Reports: structured documents written as JSON + self-contained HTML with PNG figures."""

from .document import Figure, Paragraph, Report, Section, Table, safe_filename
from .verification import verification_section
from .writer import OutputExistsError, sha256_file, write_report

__all__ = [
    "Report", "Section", "Table", "Figure", "Paragraph", "safe_filename", "verification_section",
    "write_report", "OutputExistsError", "sha256_file",
]
