"""Reads a DBN file with Databento's own Python package (databento-dbn) and prints it as
text for tests/tests/it/dbn_out.rs to compare: one JSON line of metadata, then one CSV line per
record. Independent of ticklane: the decoding is Databento's.

usage: dbn_dump.py FILE            (zstd when FILE ends in .zst)

Record lines: rtype,instrument_id,ts_event,ts_recv,ts_in_delta,sequence,flags,action,side,
then for MBO: order_id,price,size; for the others: depth,price,size and, per level,
bid_px,bid_sz,bid_ct,ask_px,ask_sz,ask_ct.
"""

import json
import sys

import databento_dbn as dbn


def char(value):
    """Action and side as their one letter, whatever type the binding hands back."""
    value = getattr(value, "value", value)
    if isinstance(value, int):
        return chr(value)
    return str(value)


def main():
    path = sys.argv[1]
    compression = dbn.Compression.ZSTD if path.endswith(".zst") else dbn.Compression.NONE
    decoder = dbn.DBNDecoder(compression=compression)
    with open(path, "rb") as f:
        decoder.write(f.read())
    items = decoder.decode()
    metadata, records = items[0], items[1:]
    assert isinstance(metadata, dbn.Metadata), type(metadata)
    mappings = {}
    for m in metadata.mappings.items() if isinstance(metadata.mappings, dict) else []:
        raw, intervals = m
        mappings[raw] = [
            [str(i["start_date"]), str(i["end_date"]), str(i["symbol"])] for i in intervals
        ]
    print(
        json.dumps(
            {
                "version": metadata.version,
                "dataset": metadata.dataset,
                "schema": str(getattr(metadata.schema, "value", metadata.schema)),
                "stype_in": str(getattr(metadata.stype_in, "value", metadata.stype_in)),
                "stype_out": str(getattr(metadata.stype_out, "value", metadata.stype_out)),
                "start": metadata.start,
                "records": len(records),
                "mappings": mappings,
            },
            sort_keys=True,
        )
    )
    out = []
    for r in records:
        head = [
            int(r.rtype),
            r.instrument_id,
            r.ts_event,
            r.ts_recv,
            r.ts_in_delta,
            r.sequence,
            int(r.flags),
            char(r.action),
            char(r.side),
        ]
        if isinstance(r, dbn.MBOMsg):
            head += [r.order_id, r.price, r.size]
        else:
            head += [r.depth, r.price, r.size]
            for level in getattr(r, "levels", []):
                head += [
                    level.bid_px,
                    level.bid_sz,
                    level.bid_ct,
                    level.ask_px,
                    level.ask_sz,
                    level.ask_ct,
                ]
        out.append(",".join(str(v) for v in head))
    sys.stdout.write("\n".join(out))
    if out:
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
