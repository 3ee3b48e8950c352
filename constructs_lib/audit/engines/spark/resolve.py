"""The join stage's resolution on Spark: references that may cross templates, by joins.

Each template's own references were resolved where it was parsed
(``resolve/within_template.py``). What is left: ``Fn::ImportValue`` names are joined to
``Export`` names, then reference keys (queue and function names from literal ARNs, URLs,
``Fn::Sub``/``Fn::Join``; a key an export names) to the resources that carry them, then all
resolved edges of the templates involved into the members of each queue's context: what
``resolve/graph.py``'s ``resolve`` and ``members`` do with dictionaries.

Each step is a DataFrame -> DataFrame function (other frames it joins with as further
arguments), so that ``frame.transform(step, ...)`` chains them; ``shared_keys``, ``resolve``,
``members`` and ``evaluation_rows`` are their compositions.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from constructs_lib.audit import model
from constructs_lib.audit.engines.spark.schemas import EDGE_COLUMNS, UNRESOLVED
from constructs_lib.audit.model import EdgeRow, ResourceRow
from constructs_lib.audit.resolve.crossing import IMPORTING
from constructs_lib.audit.resolve.within_template import NAMES


def _is_import() -> Column:
    return F.col("key").startswith("export:")


def _imported_name() -> Column:
    """The export an import names: its key without ``export:``."""
    return F.expr("substring(key, 8)")


def imports_as_touches(edges: DataFrame, exports: DataFrame) -> DataFrame:
    """Crossing edges with ``src`` -> touches (key, how, src): each import names, apart from its
    own template (``src`` + ``IMPORTING``), what every export of its name names (as a queue or
    as a function), as it may resolve in more than one template."""
    return (
        edges.filter(_is_import())
        .select(_imported_name().alias("name"), "src")
        .join(exports.select("name", "queue_key", "function_key"), "name")
        .select(
            F.explode(F.array("queue_key", "function_key")).alias("key"),
            F.lit(NAMES).alias("how"),
            F.concat(F.col("src"), F.lit(IMPORTING)).alias("src"),
        )
        .filter(F.col("key") != "")
    )


def touched_by_several(touched: DataFrame) -> DataFrame:
    """Touches (key, how, src) -> ``SHARED_SCHEMA``: the keys more than one template touches,
    with, for each way of touching one, the first and last template that does."""
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


def shared_keys(touches: DataFrame, edges: DataFrame, exports: DataFrame) -> DataFrame:
    """The keys more than one template touches (``resolve/within_template.py``), imports
    counted as naming what their exports name (``SHARED_SCHEMA``)."""
    imports = edges.transform(imports_as_touches, exports)
    return touches.unionByName(imports).transform(touched_by_several)


def with_targets(edges: DataFrame, exports: DataFrame) -> DataFrame:
    """Edges -> edges and the key each must match (``target``): an import's is what the export
    of its name names as its kind (null when no export has that name), any other edge's its
    own key."""
    imports = (
        edges.filter(_is_import())
        .withColumn("name", _imported_name())
        .join(F.broadcast(exports.select("name", "queue_key", "function_key")), "name", "left")
        .withColumn(
            "target",
            F.when(F.col("kind") == "queue", F.col("queue_key")).otherwise(F.col("function_key")),
        )
        .select(*EdgeRow._fields, "target")
    )
    direct = edges.filter(~_is_import()).withColumn("target", F.col("key"))
    return imports.unionByName(direct)


def matched_to(targeted: DataFrame, keys: DataFrame) -> DataFrame:
    """Edges with targets -> each with the uid of every resource carrying its target
    (``to_uid``), or once with a null ``to_uid`` when none does."""
    targets = keys.select(F.col("key").alias("target"), F.col("uid").alias("to_uid"))
    return targeted.join(targets, "target", "left")


def resolved_edges(matched: DataFrame) -> DataFrame:
    """Matched edges -> the resolved ones, once each (``RESOLVED_SCHEMA``)."""
    return (
        matched.filter(F.col("to_uid").isNotNull())
        .select("from_uid", "role", "detail", "to_uid")
        .distinct()
    )


def unresolved_edges(matched: DataFrame) -> DataFrame:
    """Matched edges -> those that matched nothing, with the EdgeRow columns."""
    return matched.filter(F.col("to_uid").isNull()).select(*EdgeRow._fields)


def resolve(edges: DataFrame, keys: DataFrame, exports: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(resolved edges: from_uid, role, detail, to_uid; unresolved edges with the EdgeRow columns).

    One outer join of every edge's target key with the keys gives both: an edge that matched
    nothing comes out once, with no ``to_uid``."""
    matched = edges.transform(with_targets, exports).transform(matched_to, keys)
    return matched.transform(resolved_edges), matched.transform(unresolved_edges)


def _member(queue: str, name: str, uid: str, detail: str | None = None) -> Column:
    return F.struct(
        F.col(queue).alias("queue_uid"),
        F.lit(name).alias("member"),
        (F.col(detail) if detail else F.lit("")).alias("detail"),
        F.col(uid).alias("uid"),
    )


# The member rows an edge of each role makes, as ``_member``'s arguments: the column of the queue
# whose context it joins, the member it is there, the column of its resource, the column of its
# detail (none: "").
_MEMBERS_OF_ROLE: dict[str, tuple[tuple[str, str, str, str | None], ...]] = {
    model.ROLE_DLQ: (
        ("from_uid", model.MEMBER_DLQ, "to_uid", None),
        ("to_uid", model.MEMBER_SOURCE, "from_uid", None),
    ),
    model.ROLE_EVENT_SOURCE: (("to_uid", model.MEMBER_ESM, "from_uid", None),),
    model.ROLE_ALARM: (("to_uid", model.MEMBER_ALARM, "from_uid", "detail"),),
    model.ROLE_POLICY: (("to_uid", model.MEMBER_POLICY, "from_uid", None),),
    model.ROLE_FEEDS_DLQ: (("to_uid", model.MEMBER_FEEDER, "from_uid", "detail"),),
    model.ROLE_PRODUCER: (("to_uid", model.MEMBER_PRODUCER, "from_uid", "detail"),),
    model.ROLE_ALLOW_SOURCE: (("from_uid", model.MEMBER_ALLOW_SOURCE, "to_uid", None),),
}


def _edge_members() -> Column:
    """Each resolved edge's member rows, as an array column: a DLQ edge makes two (the DLQ in
    its source's context, the source in the DLQ's), an edge of any other role one."""
    role = F.col("role")
    (first, made), *others = _MEMBERS_OF_ROLE.items()
    chosen = F.when(role == first, F.array(*(_member(*m) for m in made)))
    for name, made in others:
        chosen = chosen.when(role == name, F.array(*(_member(*m) for m in made)))
    return chosen


def edge_members(resolved: DataFrame) -> DataFrame:
    """Resolved edges -> the member rows each makes (``MEMBER_SCHEMA``; a DLQ edge makes two:
    the DLQ in its source's context and the source in the DLQ's). A mapping's edge to its
    function makes none: ``consumers`` follows those."""
    return (
        resolved.filter(F.col("role") != model.ROLE_FUNCTION)
        .select(F.explode(_edge_members()).alias("m"))
        .select("m.*")
    )


def consumers(resolved: DataFrame) -> DataFrame:
    """Resolved edges -> (mapping_uid, queue_uid, uid): each event source mapping with the queue
    it reads and its function."""
    role = F.col("role")
    event_sources = resolved.filter(role == model.ROLE_EVENT_SOURCE).select(
        F.col("from_uid").alias("mapping_uid"), F.col("to_uid").alias("queue_uid")
    )
    functions = resolved.filter(role == model.ROLE_FUNCTION).select(
        F.col("from_uid").alias("mapping_uid"), F.col("to_uid").alias("uid")
    )
    return event_sources.join(functions, "mapping_uid").distinct()


def consumer_functions(consumers_df: DataFrame) -> DataFrame:
    """Consumers -> each queue's consumer functions as members (detail: the mapping)."""
    return consumers_df.select(
        "queue_uid",
        F.lit(model.MEMBER_FUNCTION).alias("member"),
        F.col("mapping_uid").alias("detail"),
        "uid",
    )


def function_mappings(consumers_df: DataFrame) -> DataFrame:
    """Consumers -> each consumer function's mappings across the fleet, as members of every
    queue it consumes (detail: the function): a join, on the function, of the consumers with
    themselves."""
    mappings_of = consumers_df.select(
        F.col("uid").alias("function_uid"), F.col("mapping_uid").alias("uid")
    ).distinct()
    return (
        consumers_df.select("queue_uid", F.col("uid").alias("function_uid"))
        .distinct()
        .join(mappings_of, "function_uid")
        .select(
            "queue_uid",
            F.lit(model.MEMBER_FUNCTION_MAPPING).alias("member"),
            F.col("function_uid").alias("detail"),
            "uid",
        )
    )


def own_members(queues: DataFrame) -> DataFrame:
    """Queue resources -> each queue as the first member of its own context."""
    return queues.select(
        F.col("uid").alias("queue_uid"),
        F.lit(model.MEMBER_QUEUE).alias("member"),
        F.lit("").alias("detail"),
        F.col("uid"),
    )


def members(queues: DataFrame, resolved: DataFrame) -> DataFrame:
    """Who stands around each queue: ``MEMBER_SCHEMA`` (see ``resolve/graph.py``'s
    ``members``): the queues themselves, what their edges reach, their consumer functions and
    those functions' mappings, wherever they are in the fleet."""
    consumers_df = resolved.transform(consumers)
    return (
        queues.transform(own_members)
        .unionByName(resolved.transform(edge_members))
        .unionByName(consumers_df.transform(consumer_functions))
        .unionByName(consumers_df.transform(function_mappings))
    )


def member_rows(members_df: DataFrame, resources: DataFrame) -> DataFrame:
    """Members -> ``EVALUATION_SCHEMA`` rows: each with its resource's columns, no edge."""
    no_edge = [F.lit(None).cast("string").alias(c) for c in EDGE_COLUMNS]
    return members_df.join(resources, "uid").select(
        "queue_uid", "member", "detail", *ResourceRow._fields, *no_edge
    )


def unresolved_rows(unresolved: DataFrame, resources: DataFrame) -> DataFrame:
    """Unresolved edges -> ``EVALUATION_SCHEMA`` rows: member ``UNRESOLVED``, in the context of
    the resource the edge leaves (its columns), with the edge's."""
    edges = unresolved.select(*[F.col(c).alias(f"edge_{c}") for c in EdgeRow._fields])
    return edges.join(resources, edges["edge_from_uid"] == resources["uid"]).select(
        F.col("uid").alias("queue_uid"),
        F.lit(UNRESOLVED).alias("member"),
        F.lit("").alias("detail"),
        *ResourceRow._fields,
        *EDGE_COLUMNS,
    )


def by_queue(rows: DataFrame, partitions: int) -> DataFrame:
    """Rows partitioned and sorted by queue, so that one pass meets each queue's together."""
    return rows.repartition(partitions, "queue_uid").sortWithinPartitions("queue_uid")


def evaluation_rows(
    members_df: DataFrame, unresolved: DataFrame, resources: DataFrame, partitions: int
) -> DataFrame:
    """Each member with its resource's columns, and each unresolved edge with its source's,
    partitioned and sorted by queue so that one pass meets each queue's members together."""
    return (
        members_df.transform(member_rows, resources)
        .unionByName(unresolved.transform(unresolved_rows, resources))
        .transform(by_queue, partitions)
    )
