"""Workbooks (`.xlsx`) written by hand, part by part, so that a sheet holds exactly what a test needs: a cell far
away, a declared size, a shared string of any length (openpyxl would write what it thinks a sheet should be)."""

from __future__ import annotations

import zipfile
from pathlib import Path

__all__ = ["far_cell_workbook", "hand_workbook", "text_cell"]


def hand_workbook(path: Path, dimension: str, rows: str, shared: str = "") -> Path:
    """A one-sheet .xlsx written by hand, so that the sheet holds exactly what the case needs."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rels = "http://schemas.openxmlformats.org/package/2006/relationships"
    office = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    types = "http://schemas.openxmlformats.org/package/2006/content-types"
    sheet_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
    book_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
    parts = {
        "[Content_Types].xml": f'<Types xmlns="{types}"><Default Extension="rels" ContentType="application/vnd.'
        'openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{book_type}"/>'
        f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{sheet_type}"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="{rels}"><Relationship Id="rId1" Type="{office}/officeDocument" '
        'Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{main}" xmlns:r="{office}"><sheets><sheet name="Flow" sheetId="1" '
        'r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{rels}"><Relationship Id="rId1" Type="{office}/'
        'worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'<worksheet xmlns="{main}"><dimension ref="{dimension}"/><sheetData>{rows}'
        "</sheetData></worksheet>",
    }
    if shared:
        parts["xl/sharedStrings.xml"] = f'<sst xmlns="{main}"><si><t>{shared}</t></si></sst>'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as book:
        for name, text in parts.items():
            book.writestr(name, text)
    return path


def text_cell(ref: str, value: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{value}</t></is></c>'


def far_cell_workbook(path: Path, far: str) -> Path:
    """Two rows of a graph, and one more cell at XFD1048576 (`far`: its XML), the sheet declaring A1:XFD1048576."""
    header = text_cell("A1", "GraphName") + text_cell("B1", "Node") + text_cell("C1", "AgentType")
    row = text_cell("A2", "G") + text_cell("B2", "A") + text_cell("C2", "echo")
    rows = f'<row r="1">{header}</row><row r="2">{row}</row><row r="1048576">{far}</row>'
    return hand_workbook(path, "A1:XFD1048576", rows)
