"""``decode_packets(df, columns=[...])`` on Spark: the declared schema and the values of a subset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pymsmq.spark.columns import packet_row

VECTORS = sorted((Path(__file__).parents[1] / "vectors").glob("*.bin"))
WANTED = ["label", "kind", "sent_time", "message_id", "priority", "destination"]


def test_decode_packets_with_a_subset_of_columns(spark: Any) -> None:
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType, TimestampType

    from pymsmq.spark import decode_packets

    rows = [(p.name, p.read_bytes()) for p in VECTORS] + [("null", None), ("cut", b"LIOR")]
    df = spark.createDataFrame(rows, "name string, packet binary")
    out = decode_packets(df, columns=WANTED)
    assert out.columns == ["name", "packet", *WANTED]
    assert out.schema == StructType(
        [
            StructField("name", StringType(), True),
            StructField("packet", df.schema["packet"].dataType, True),
            StructField("label", StringType(), True),
            StructField("kind", StringType(), True),
            StructField("sent_time", TimestampType(), True),
            StructField("message_id", StringType(), True),
            StructField("priority", IntegerType(), True),
            StructField("destination", StringType(), True),
        ]
    )
    got = {r["name"]: r.asDict() for r in out.collect()}
    for name, packet in rows:
        ref = packet_row(packet)
        if ref["sent_time"] is not None:
            ref["sent_time"] = ref["sent_time"].replace(tzinfo=None)  # collect(): naive, UTC session zone
        assert got[name] == {"name": name, "packet": packet, **{c: ref[c] for c in WANTED}}, name
    assert got["null"]["kind"] == got["cut"]["kind"] == "error"
    assert got["mqqb-4.1.7-frame7-usermessage.bin"]["kind"] == "UserMessage"

    # Without the input columns, and a decoded column whose name an unselected input column may share.
    only = decode_packets(df.withColumnRenamed("name", "error"), keep_input=False, columns=["kind"])
    assert only.columns == ["kind"]
    assert sorted(r["kind"] for r in only.collect()) == sorted(packet_row(p)["kind"] for _, p in rows)


def test_decode_packets_rejects_bad_column_selections(spark: Any) -> None:
    from pymsmq.spark import decode_packets

    df = spark.createDataFrame([(b"",)], "packet binary")
    for columns, bad in (
        ([], "at least one"),
        (["kind", "kinds"], "['kinds']"),
        (["kind", "kind"], "['kind']"),
    ):
        with pytest.raises(ValueError, match="valid") as info:
            decode_packets(df, columns=columns)
        assert bad in str(info.value)
    with pytest.raises(ValueError, match="clash"):
        decode_packets(df.withColumnRenamed("packet", "body"), "body", columns=["body"])
