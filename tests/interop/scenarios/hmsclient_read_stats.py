"""Read one column's table statistics with hmsclient (Hive 2.3.3 IDL) and print the outcome as JSON.

hmsclient declares bitVectors as a Thrift string, so under Python 3 sketch bytes in a reply are decoded as UTF-8;
this shows whether a server's reply is readable by it.
"""

from __future__ import annotations

import argparse

from hmsclient import hmsclient
from scenario_common import Recorder, emit, normalise_column_statistics


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--column", required=True)
    args = parser.parse_args()
    client = hmsclient.HMSClient(host=args.host, port=args.port)
    client.open()
    rec = Recorder("hmsclient")
    rec.step(
        "get_table_column_statistics",
        lambda: client.get_table_column_statistics(args.db, args.table, args.column),
        normalise_column_statistics,
    )
    client.close()
    emit(rec.output())


if __name__ == "__main__":
    main()
