"""Sheet readers and parsers: CSV/XLSX/Parquet → text frames → canonical, typed columns.

Public surface: `read_file` / `ReadLimits` / `RawSheet` (readers), `parse_money` (money text →
cents), `parse_datetimes` (date-times in a zone → ISO with the zone's offset), `load_templates` /
`normalize_header` (templates from ``schemas/templates``), `Issue` / `FileReport`.
"""

from fundpipe.sheets.datetimes import parse_datetimes
from fundpipe.sheets.money import format_cents, format_spreadsheet_number, parse_money
from fundpipe.sheets.readers import RawSheet, ReadLimits, ReadResult, read_file
from fundpipe.sheets.templates import Template, load_templates, normalize_header

__all__ = [
    "RawSheet",
    "ReadLimits",
    "ReadResult",
    "Template",
    "format_cents",
    "format_spreadsheet_number",
    "load_templates",
    "normalize_header",
    "parse_datetimes",
    "parse_money",
    "read_file",
]
