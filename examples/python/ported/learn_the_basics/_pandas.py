"""pandas.read_csv for the ported "Learn the Basics" pages where pandas is missing: a table whose
first row names the columns, numbers read as ints or floats, indexed by position with ``iloc``."""

import csv


def _value(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class _ILoc:
    def __init__(self, rows):
        self._rows = rows

    def __getitem__(self, key):
        row, column = key
        return self._rows[row][column]


class DataFrame:
    """The rows of a CSV file under its header's column names."""

    def __init__(self, columns, rows):
        self.columns = columns
        self._rows = rows
        self.iloc = _ILoc(rows)

    def __len__(self):
        return len(self._rows)


def read_csv(path):
    """The CSV file at `path` as a DataFrame (its first row is the header)."""
    with open(path, newline="") as f:
        lines = [line for line in csv.reader(f, skipinitialspace=True) if line]
    return DataFrame(lines[0], [[_value(v) for v in line] for line in lines[1:]])
