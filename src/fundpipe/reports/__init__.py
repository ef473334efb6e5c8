"""Stage ⑧: the reconciliation workbook and the rejected-file reports."""
