"""Find formula cells that carry no cached value in an XLSX (calamine reads them as blank).

Excel saves every formula's last result next to it (``<f>…</f><v>…</v>``); files written by
libraries such as openpyxl often do not, and such a cell must be a row error rather than a
silently blank amount. The scan only looks around each ``<f`` in the sheet XML, so a sheet
without formulas costs one substring search.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

_CELL_OPEN = re.compile(rb'<c\b[^>]*\br="([A-Z]+)(\d+)"[^>]*?(/?)>')
_VALUE = re.compile(rb"<v>([^<]*)</v>|<is>")
_REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def _column_index(letters: bytes) -> int:
    index = 0
    for ch in letters:
        index = index * 26 + (ch - 64)
    return index - 1


def sheet_paths(archive: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name → path of its XML part inside the archive."""
    workbook = ElementTree.fromstring(archive.read("xl/workbook.xml"))  # noqa: S314 - size bounded by the caller's zip checks
    rels = ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))  # noqa: S314
    targets = {r.get("Id"): r.get("Target", "") for r in rels}
    out: dict[str, str] = {}
    for sheet in workbook.iter():
        if sheet.tag.endswith("}sheet"):
            target = targets.get(sheet.get(_REL_NS), "")
            path = target.lstrip("/") if target.startswith("/") else "xl/" + target
            out[sheet.get("name", "")] = path
    return out


def formulas_without_values(path: Path) -> dict[str, list[tuple[int, int]]]:
    """Sheet name → (Excel row, column position) of every formula cell with no cached value."""
    found: dict[str, list[tuple[int, int]]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for name, part in sheet_paths(archive).items():
                xml = archive.read(part)
                if b"<f" not in xml:
                    continue
                cells: list[tuple[int, int]] = []
                start = 0
                while (pos := xml.find(b"<f", start)) >= 0:
                    start = pos + 2
                    if xml[pos + 2 : pos + 3] not in (b">", b" ", b"/"):
                        continue
                    open_at = xml.rfind(b"<c ", 0, pos)
                    close_at = xml.find(b"</c>", pos)
                    if open_at < 0 or close_at < 0:
                        continue
                    m = _CELL_OPEN.match(xml, open_at)
                    if not m:
                        continue
                    body = xml[m.end() : close_at]
                    value = _VALUE.search(body)
                    if value is None or (value.group(1) is not None and not value.group(1).strip()):
                        cells.append((int(m.group(2)), _column_index(m.group(1))))
                if cells:
                    found[name] = cells
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, OSError):
        return found
    return found
