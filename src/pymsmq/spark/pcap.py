"""``read_pcap``: packet captures of port 1801 traffic -> a DataFrame of decoded MSMQ packets.

The capture files are parsed in the Python workers (one task per file) by ``pymsmq.spark.pcap_parse``
(TCP reassembly, MSMQ framing), then decoded by ``decode_packets``.  The files must be readable from the
workers at the same path (local mode, or a shared file system).
"""

from __future__ import annotations

import glob
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pymsmq.spark.decode import decode_packets
from pymsmq.spark.pcap_parse import MSMQ_PORT, read_pcap_packets

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CAPTURE_SCHEMA", "read_pcap"]

#: Columns describing where each packet came from (followed by the decoded columns).
CAPTURE_SCHEMA = StructType(
    [
        StructField("path", StringType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("src", StringType(), True),
        StructField("sport", IntegerType(), True),
        StructField("dst", StringType(), True),
        StructField("dport", IntegerType(), True),
        StructField("stream_offset", LongType(), True),
        StructField("packet", BinaryType(), True),
        StructField("capture_error", StringType(), True),
    ]
)
_ARROW_CAPTURE = pa.schema(
    [
        ("path", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("src", pa.string()),
        ("sport", pa.int32()),
        ("dst", pa.string()),
        ("dport", pa.int32()),
        ("stream_offset", pa.int64()),
        ("packet", pa.binary()),
        ("capture_error", pa.string()),
    ]
)
_BATCH = 10_000


class _ReadFiles:
    """mapInArrow function: a batch of paths -> the captured packets of those files."""

    def __init__(self, ports: tuple[int, ...] | None, strict: bool) -> None:
        self.ports = ports
        self.strict = strict

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path in batch.column(0).to_pylist():
                rows: list[dict[str, object]] = []
                errors: list[str] | None = None if self.strict else []
                for p in read_pcap_packets(path, self.ports, errors):
                    rows.append(
                        {
                            "path": path,
                            "timestamp": p.timestamp,
                            "src": p.src,
                            "sport": p.sport,
                            "dst": p.dst,
                            "dport": p.dport,
                            "stream_offset": p.stream_offset,
                            "packet": p.data,
                            "capture_error": p.error,
                        }
                    )
                    if len(rows) >= _BATCH:
                        yield pa.RecordBatch.from_pylist(rows, schema=_ARROW_CAPTURE)
                        rows = []
                if errors:  # the file is not a capture, or broken part way: one row says so
                    rows.append({"path": path, "packet": None, "capture_error": f"capture file: {errors[0]}"})
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=_ARROW_CAPTURE)


def read_pcap(
    spark: SparkSession,
    path_or_glob: str | Path | list[str | Path],
    *,
    ports: tuple[int, ...] | None = (MSMQ_PORT,),
    decode: bool = True,
    strict: bool = False,
) -> DataFrame:
    """A DataFrame of the MSMQ packets in pcap/pcapng captures, one row per packet.

    Columns: ``CAPTURE_SCHEMA`` (path, timestamp, src, sport, dst, dport, stream_offset, packet,
    capture_error), then, with ``decode=True``, the ``decode_packets`` columns.  ``path_or_glob`` is a
    file, a glob pattern or a list of either; no match raises ``FileNotFoundError``.  ``ports`` selects
    the TCP traffic to reassemble (None: every port).

    A file that is not a capture, is cut short or cannot be read gives the packets before the break
    and one row with that path, no packet and ``capture_error`` ``"capture file: <reason>"``; the
    other files are read.  ``strict=True`` fails the job instead.
    """
    patterns = path_or_glob if isinstance(path_or_glob, list) else [path_or_glob]
    files: list[str] = []
    for pattern in patterns:
        text = str(pattern)
        matches = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        files.extend(str(Path(m).resolve()) for m in matches if Path(m).is_file())
    if not files:
        raise FileNotFoundError(f"no capture file matches {path_or_glob!r}")
    paths = spark.createDataFrame([(f,) for f in files], "path string").repartition(len(files))
    reader = _ReadFiles(None if ports is None else tuple(ports), strict)
    captured = paths.mapInArrow(reader, CAPTURE_SCHEMA)
    return decode_packets(captured, "packet") if decode else captured
