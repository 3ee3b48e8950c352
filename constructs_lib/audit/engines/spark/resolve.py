"""The join stage's resolution on Spark: references that may cross templates, by joins.

Each template's own references were resolved where it was parsed (``within_template.py``).
What is left: ``Fn::ImportValue`` names are joined to ``Export`` names, then reference keys
(queue and function names from literal ARNs, URLs, ``Fn::Sub``/``Fn::Join``; a key an export
names) to the resources that carry them, then all resolved edges of the templates involved into
the members of each queue's context: what ``graph.resolve`` and ``graph.members`` do with
dictionaries.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from constructs_lib.audit import model
from constructs_lib.audit.engines.spark.schemas import EDGE_COLUMNS, UNRESOLVED
from constructs_lib.audit.model import EdgeRow, ResourceRow
from constructs_lib.audit.resolve.within_template import NAMES

# Appended to an importing template's name where its imports touch keys: an import may resolve
# to a resource of its own template and of others, so it counts as another template.
IMPORTING = "\u0000import"


def shared_keys(touches: DataFrame, edges: DataFrame, exports: DataFrame) -> DataFrame:
    """The keys more than one template touches (``within_template.py``), with, for each way of
    touching one (``how``: owns or names), the first and last template that does (``first``,
    ``last``). Each import counts as naming, apart from its own template, what every export of
    its name names (as a queue or as a function): it may resolve in more than one template."""
    imports = (
        edges.filter(F.col("key").startswith("export:"))
        .select(F.expr("substring(key, 8)").alias("name"), "src")
        .join(exports.select("name", "queue_key", "function_key"), "name")
        .select(
            F.explode(F.array("queue_key", "function_key")).alias("key"),
            F.lit(NAMES).alias("how"),
            F.concat(F.col("src"), F.lit(IMPORTING)).alias("src"),
        )
        .filter(F.col("key") != "")
    )
    touched = touches.unionByName(imports)
    shared = (
        touched.groupBy("key")
        .agg(F.min("src").alias("first"), F.max("src").alias("last"))
        .filter(F.col("first") != F.col("last"))
    )
    return (
        touched.join(shared.select("key"), "key", "left_semi")
        .groupBy("key", "how")
        .agg(F.min("src").alias("first"), F.max("src").alias("last"))
    )


def resolve(edges: DataFrame, keys: DataFrame, exports: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(resolved edges: from_uid, role, detail, to_uid; unresolved edges with the EdgeRow columns).

    One outer join of every edge's target key with the keys gives both: an edge that matched
    nothing comes out once, with no ``to_uid``."""
    is_import = F.col("key").startswith("export:")
    imports = (
        edges.filter(is_import)
        .withColumn("name", F.expr("substring(key, 8)"))
        .join(F.broadcast(exports.select("name", "queue_key", "function_key")), "name", "left")
        .withColumn(
            "target",
            F.when(F.col("kind") == "queue", F.col("queue_key")).otherwise(F.col("function_key")),
        )
        .select(*EdgeRow._fields, "target")
    )
    direct = edges.filter(~is_import).withColumn("target", F.col("key"))
    targets = keys.select(F.col("key").alias("target"), F.col("uid").alias("to_uid"))
    matched = imports.unionByName(direct).join(targets, "target", "left")
    resolved = (
        matched.filter(F.col("to_uid").isNotNull())
        .select("from_uid", "role", "detail", "to_uid")
        .distinct()
    )
    unresolved = matched.filter(F.col("to_uid").isNull()).select(*EdgeRow._fields)
    return resolved, unresolved


def _member(queue: str, name: str, uid: str, detail: str | None = None) -> Any:
    return F.struct(
        F.col(queue).alias("queue_uid"),
        F.lit(name).alias("member"),
        (F.col(detail) if detail else F.lit("")).alias("detail"),
        F.col(uid).alias("uid"),
    )


def _edge_members() -> Any:
    """Each resolved edge's member rows, as an array column: a DLQ edge makes two (the DLQ in
    its source's context, the source in the DLQ's), an edge of any other role one."""
    role = F.col("role")
    return (
        F.when(
            role == model.ROLE_DLQ,
            F.array(
                _member("from_uid", model.MEMBER_DLQ, "to_uid"),
                _member("to_uid", model.MEMBER_SOURCE, "from_uid"),
            ),
        )
        .when(
            role == model.ROLE_EVENT_SOURCE,
            F.array(_member("to_uid", model.MEMBER_ESM, "from_uid")),
        )
        .when(
            role == model.ROLE_ALARM,
            F.array(_member("to_uid", model.MEMBER_ALARM, "from_uid", "detail")),
        )
        .when(
            role == model.ROLE_POLICY, F.array(_member("to_uid", model.MEMBER_POLICY, "from_uid"))
        )
        .when(
            role == model.ROLE_FEEDS_DLQ,
            F.array(_member("to_uid", model.MEMBER_FEEDER, "from_uid", "detail")),
        )
        .when(
            role == model.ROLE_PRODUCER,
            F.array(_member("to_uid", model.MEMBER_PRODUCER, "from_uid", "detail")),
        )
        .when(
            role == model.ROLE_ALLOW_SOURCE,
            F.array(_member("from_uid", model.MEMBER_ALLOW_SOURCE, "to_uid")),
        )
    )


def members(queues: DataFrame, resolved: DataFrame) -> DataFrame:
    """Who stands around each queue: queue_uid, member, detail, uid (see ``graph.members``).

    One pass over the resolved edges turns each edge into its member rows (a DLQ edge makes two:
    the DLQ in its source's context and the source in the DLQ's); one join adds each event
    source's function to the queue it reads, and a join of those on the function adds all of
    the function's queue-reading mappings, wherever they are in the fleet.
    """
    role = F.col("role")
    from_edges = (
        resolved.filter(role != model.ROLE_FUNCTION)
        .select(F.explode(_edge_members()).alias("m"))
        .select("m.*")
    )
    event_sources = resolved.filter(role == model.ROLE_EVENT_SOURCE).select(
        F.col("from_uid").alias("mapping_uid"), F.col("to_uid").alias("queue_uid")
    )
    functions = resolved.filter(role == model.ROLE_FUNCTION).select(
        F.col("from_uid").alias("mapping_uid"), F.col("to_uid").alias("uid")
    )
    consumers = event_sources.join(functions, "mapping_uid").distinct()
    consumer_functions = consumers.select(
        "queue_uid",
        F.lit(model.MEMBER_FUNCTION).alias("member"),
        F.col("mapping_uid").alias("detail"),
        "uid",
    )
    # Each consumer function's mappings across the fleet, into every queue it consumes: a
    # second join, on the function, of the consumers with themselves.
    mappings_of = consumers.select(
        F.col("uid").alias("function_uid"), F.col("mapping_uid").alias("uid")
    ).distinct()
    function_mappings = (
        consumers.select("queue_uid", F.col("uid").alias("function_uid"))
        .distinct()
        .join(mappings_of, "function_uid")
        .select(
            "queue_uid",
            F.lit(model.MEMBER_FUNCTION_MAPPING).alias("member"),
            F.col("function_uid").alias("detail"),
            "uid",
        )
    )
    own = queues.select(
        F.col("uid").alias("queue_uid"),
        F.lit(model.MEMBER_QUEUE).alias("member"),
        F.lit("").alias("detail"),
        F.col("uid"),
    )
    return (
        own.unionByName(from_edges).unionByName(consumer_functions).unionByName(function_mappings)
    )


def evaluation_rows(
    members_df: DataFrame, unresolved: DataFrame, resources: DataFrame, partitions: int
) -> DataFrame:
    """Each member with its resource's columns, and each unresolved edge with its source's,
    partitioned and sorted by queue so that one pass meets each queue's members together."""
    no_edge = [F.lit(None).cast("string").alias(c) for c in EDGE_COLUMNS]
    member_rows = members_df.join(resources, "uid").select(
        "queue_uid", "member", "detail", *ResourceRow._fields, *no_edge
    )
    edges = unresolved.select(*[F.col(c).alias(f"edge_{c}") for c in EdgeRow._fields])
    unresolved_rows = edges.join(resources, edges["edge_from_uid"] == resources["uid"]).select(
        F.col("uid").alias("queue_uid"),
        F.lit(UNRESOLVED).alias("member"),
        F.lit("").alias("detail"),
        *ResourceRow._fields,
        *EDGE_COLUMNS,
    )
    return (
        member_rows.unionByName(unresolved_rows)
        .repartition(partitions, "queue_uid")
        .sortWithinPartitions("queue_uid")
    )
