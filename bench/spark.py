"""Spark benchmark: decode 1M MSMQ packets with ``pymsmq.spark.decode_packets`` on local[2].

Measured (DESIGN.md targets, 2 cores):
- ``decode``: 1M cached UserMessage packets (200-byte body, direct format name, label, GUIDs) decoded
  into every column and written to the ``noop`` sink (target >= 1M packets/s); the scan of the cached
  packets alone is measured in the same run as the floor.
- ``vectorised``: the same decoder in one Python process without Spark (rows/s per core).

Not measured yet (they need the queue-manager server): reading a 1M-message queue into a DataFrame
(target >= 300k messages/s) and the streaming end-to-end rate.  Each will be one more ``bench_*``
function returning its result lines.

    python bench/spark.py [--quick] [--no-write] [--packets N]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from _report import machine, write_section

SECTION = "## Spark (bench/spark.py)"
PENDING = (
    "read a 1M-message queue into a DataFrame (target >= 300k messages/s): not measured yet (needs server)",
    "streaming end-to-end rate: not measured yet (needs the server)",
)


def sample_packets(n: int) -> list[bytes]:
    """``n`` distinct packets of the bench/wire.py shape (labels, ids and bodies vary)."""
    from pymsmq.wire import UserMessage

    rnd = random.Random(1801)
    qm = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
    return [
        UserMessage.build(
            destination="TCP:10.0.0.1\\PRIVATE$\\orders",
            body=rnd.randbytes(200),
            label=f"order {i}",
            priority=rnd.randrange(8),
            source_queue_manager=qm,
            message_id=i,
            sent_time=1_700_000_000 + i,
            recoverable=bool(i & 1),
        ).encode()
        for i in range(n)
    ]


def session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pymsmq-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_vectorised(packets: list[bytes], repeat: int) -> list[str]:
    """The Arrow decoder alone, one process, 10k-packet batches."""
    import pyarrow as pa

    from pymsmq.spark.arrow_decode import decode_array

    batches = [pa.array(packets[i : i + 10_000], pa.binary()) for i in range(0, len(packets), 10_000)]
    n = sum(len(b) for b in batches)
    seconds = best(lambda: [decode_array(b) for b in batches], repeat)
    return [f"vectorised decoder, one process, no Spark: {n / seconds:,.0f} packets/s per core"]


def bench_decode(spark: Any, packets: list[bytes], total: int, repeat: int) -> list[str]:
    """decode_packets over ``total`` cached packets (the sample repeated), noop sink."""
    from pyspark.sql import functions as sf

    from pymsmq.spark import decode_packets

    sample = spark.createDataFrame([(p,) for p in packets], "packet binary")
    copies = max(1, total // len(packets))
    df = (
        spark.range(copies, numPartitions=2).crossJoin(sample).select(sf.col("packet")).repartition(2).cache()
    )
    n = df.count()
    scan = best(lambda: df.write.format("noop").mode("overwrite").save(), repeat)
    decoded = decode_packets(df, keep_input=False)
    decoded.write.format("noop").mode("overwrite").save()  # warm-up: Python workers, JIT
    seconds = best(lambda: decoded.write.format("noop").mode("overwrite").save(), repeat)
    return [
        f"scan of {n:,} cached packets (floor): {n / scan:,.0f} packets/s",
        f"decode_packets, {n:,} packets -> {len(decoded.columns)} columns, noop sink, local[2]: "
        f"{n / seconds:,.0f} packets/s ({seconds:.2f} s; target >= 1,000,000/s)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k packets, one run")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    parser.add_argument("--packets", type=int, default=1_000_000)
    args = parser.parse_args()
    total = 100_000 if args.quick else args.packets
    repeat = 1 if args.quick else 3
    packets = sample_packets(20_000)
    lines = bench_vectorised(packets, repeat)
    spark = session()
    try:
        lines += bench_decode(spark, packets, total, repeat)
    finally:
        spark.stop()
    lines += list(PENDING)
    for line in lines:
        print(line)
    if not args.no_write:
        text = (
            f"{SECTION}\n\nMeasured on {machine()}, Spark local[2], best of {repeat}.\n\n"
            + "\n".join(f"- {line}" for line in lines)
            + "\n"
        )
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
