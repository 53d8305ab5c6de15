"""Reads a Parquet file with Apache Arrow's own Python package (pyarrow) and prints it as text
for tests/tests/it/parquet_out.rs to compare: one JSON line describing the file, then one CSV
line per row (a null is an empty field). Independent of ticklane: the decoding is Arrow's.

usage: parquet_dump.py FILE INPUT

The JSON line holds: the footer's key-value metadata (`metadata`, text), the summary in it
parsed as JSON (`summary`), the column names and Arrow types, the row count, the row-group
count and each row group's row count, the compression codecs used, the sorting columns the
footer declares, and `input_crc32`: zlib's CRC-32 of INPUT's bytes, as 8 hex digits.
"""

import json
import sys
import zlib

import pyarrow.parquet as pq


def crc32(path):
    crc = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                return "%08x" % crc
            crc = zlib.crc32(block, crc)


def main():
    path, input_path = sys.argv[1], sys.argv[2]
    pf = pq.ParquetFile(path)
    md = pf.metadata
    kv = {k.decode(): v.decode() for k, v in (md.metadata or {}).items()}
    codecs = sorted(
        {
            md.row_group(g).column(c).compression
            for g in range(md.num_row_groups)
            for c in range(md.num_columns)
        }
    )
    sorting = []
    if md.num_row_groups:
        sorting = [
            [pf.schema_arrow.names[s.column_index], s.descending]
            for s in (md.row_group(0).sorting_columns or [])
        ]
    table = pf.read()
    info = {
        "metadata": {k: v for k, v in kv.items() if not k.startswith("ARROW")},
        "summary": json.loads(kv["ticklane.summary"]) if "ticklane.summary" in kv else None,
        "columns": [[f.name, str(f.type)] for f in table.schema],
        "rows": table.num_rows,
        "row_groups": [md.row_group(g).num_rows for g in range(md.num_row_groups)],
        "codecs": codecs,
        "sorting": sorting,
        "input_crc32": crc32(input_path),
    }
    print(json.dumps(info, sort_keys=True))
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    out = []
    for row in zip(*columns):
        out.append(",".join("" if v is None else str(v) for v in row))
    sys.stdout.write("\n".join(out))
    if out:
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
