"""Reading and writing the seed's CSV files (docs/access_data.md describes every column).

Import is all or nothing: every file is read and every row checked inside one transaction;
one bad row (a missing field, a date that is not a date, a reference to nobody) and the
whole import is rolled back, with each problem named by file, row (the line number in the
file) and field. Rows are matched on their ids, so importing the same files twice changes
nothing the second time. Mutations with status Pending are investigated once the import
has committed; other statuses are history, stored as they are.

files.py      the files and their columns, problems and results
rows.py       one row's field readers, each problem named by file, row and column
importer.py   the all-or-nothing import
exporter.py   the export
"""

from casework.access.data_io.exporter import access_data_export
from casework.access.data_io.files import COLUMNS, EXPORT_ONLY, ImportFailed, ImportResult, Problem
from casework.access.data_io.importer import Importer, access_data_import

__all__ = ["COLUMNS", "EXPORT_ONLY", "ImportFailed", "ImportResult", "Importer", "Problem", "access_data_export",
           "access_data_import"]
