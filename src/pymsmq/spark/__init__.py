"""pymsmq on Apache Spark (the ``pymsmq[spark]`` extra: pyspark 4.x, pyarrow, pandas < 3).

    from pymsmq.spark import decode_packets, read_pcap, register
    register(spark)                                 # the "msmq" data source (batch + streaming)
    df = spark.read.format("msmq").option("url", "msmq://127.0.0.1:2103").load(".\\private$\\orders")
    decoded = decode_packets(df, "packet")          # binary packets -> typed columns (mapInArrow)
    packets = read_pcap(spark, "captures/*.pcap")   # port 1801 captures -> one row per MSMQ packet

Names are imported lazily: ``import pymsmq.spark`` works without pyspark, so the pure helpers
(``pymsmq.spark.pcap_parse``, ``pymsmq.spark.columns``) stay usable; using a Spark function without the
extra raises ``ImportError`` naming it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pymsmq.spark.datasource import MsmqDataSource, register
    from pymsmq.spark.decode import decode_packets
    from pymsmq.spark.pcap import read_pcap

__all__ = ["MsmqDataSource", "decode_packets", "read_pcap", "register"]

_LAZY = {
    "decode_packets": "pymsmq.spark.decode",
    "read_pcap": "pymsmq.spark.pcap",
    "MsmqDataSource": "pymsmq.spark.datasource",
    "register": "pymsmq.spark.datasource",
}
_EXTRA_HINT = (
    "pymsmq.spark needs the spark extra: pip install 'pymsmq[spark]' (pyspark 4.x, pyarrow, pandas<3)"
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pymsmq.spark' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] in {"pyspark", "pyarrow", "numpy", "pandas", "py4j"}:
            raise ImportError(f"{_EXTRA_HINT} ({exc})", name=exc.name) from exc
        raise
    globals()[name] = value
    return value
