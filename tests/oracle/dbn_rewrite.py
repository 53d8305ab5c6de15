"""Reads a DBN MBO file with Databento's own Python package (databento-dbn) and writes it
again with that package's encoder, so that the DBN round trip (ITCH -> DBN -> ITCH books)
goes through code ticklane did not write.

usage: dbn_rewrite.py IN OUT      (zstd in or out when the name ends in .zst)

Nothing is copied as bytes. The metadata is built anew with `databento_dbn.Metadata` from
the fields the decoder read (dataset, schema, start, end, stype in and out, symbols and
mappings), and every record anew with `databento_dbn.MBOMsg` from its decoded fields; the
result goes through `databento_dbn.Transcoder` (DBN encoding, zstd when OUT ends in .zst).
Prints one line: `records N`.
"""

import sys
from types import SimpleNamespace

import databento_dbn as dbn


def main():
    src, dst = sys.argv[1], sys.argv[2]
    zstd_in = src.endswith(".zst")
    decoder = dbn.DBNDecoder(compression=dbn.Compression.ZSTD if zstd_in else dbn.Compression.NONE)
    with open(src, "rb") as f:
        decoder.write(f.read())
    items = decoder.decode()
    old, records = items[0], items[1:]
    assert isinstance(old, dbn.Metadata), type(old)
    # `SymbolMapping` and `MappingInterval` are protocols: any object with the attributes.
    mappings = [
        SimpleNamespace(
            raw_symbol=raw,
            intervals=[
                SimpleNamespace(
                    start_date=i["start_date"], end_date=i["end_date"], symbol=str(i["symbol"])
                )
                for i in intervals
            ],
        )
        for raw, intervals in old.mappings.items()
    ]
    metadata = dbn.Metadata(
        dataset=old.dataset,
        start=old.start,
        end=old.end,
        stype_in=old.stype_in,
        stype_out=old.stype_out,
        schema=old.schema,
        symbols=list(old.symbols),
        mappings=mappings,
    )
    out = [bytes(metadata)]
    for r in records:
        assert isinstance(r, dbn.MBOMsg), type(r)
        out.append(
            bytes(
                dbn.MBOMsg(
                    publisher_id=r.publisher_id,
                    instrument_id=r.instrument_id,
                    ts_event=r.ts_event,
                    order_id=r.order_id,
                    price=r.price,
                    size=r.size,
                    action=r.action,
                    side=r.side,
                    ts_recv=r.ts_recv,
                    flags=int(r.flags),
                    channel_id=r.channel_id,
                    ts_in_delta=r.ts_in_delta,
                    sequence=r.sequence,
                )
            )
        )
    compression = dbn.Compression.ZSTD if dst.endswith(".zst") else dbn.Compression.NONE
    with open(dst, "wb") as f:
        transcoder = dbn.Transcoder(f, dbn.Encoding.DBN, compression)
        transcoder.write(b"".join(out))
        transcoder.finish()
    print(f"records {len(records)}")


if __name__ == "__main__":
    main()
