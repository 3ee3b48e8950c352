"""How the metrics input on Spark packs objects into read tasks (``engines/spark/packing.py``):
by size and an open cost per object, as Spark's file sources pack files, and the tasks planned
are the partitions the read runs in."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F

from constructs_lib.audit.engines.spark import packing as spark_packing
from constructs_lib.audit.metrics.stream import StreamObject

MIB = 2**20
# A target of 10 MiB a task and 1 MiB to open an object: small enough to count by hand.
PACKING = spark_packing.TaskPacking(max_bytes=10 * MIB, open_cost=MIB, min_tasks=2)


def _sizes(tasks: list[list[int]], sizes: list[int]) -> list[list[int]]:
    return [[sizes[i] for i in task] for task in tasks]


def test_no_objects_are_no_tasks() -> None:
    assert spark_packing.plan_tasks([], PACKING) == []


def test_every_object_is_in_exactly_one_task() -> None:
    sizes = [(i * 7919) % (3 * MIB) for i in range(500)]
    tasks = spark_packing.plan_tasks(sizes, PACKING)
    assert sorted(i for task in tasks for i in task) == list(range(len(sizes)))


def test_an_object_over_the_target_is_alone_in_its_task() -> None:
    sizes = [1000, 50 * MIB, 2000, 3000]
    tasks = _sizes(spark_packing.plan_tasks(sizes, PACKING), sizes)
    assert [50 * MIB] in tasks
    assert sorted(s for task in tasks for s in task) == sorted(sizes)


def test_many_tiny_objects_are_few_tasks_each_worth_the_target() -> None:
    # 1,000 objects of 1 KiB: each costs about 1 MiB to open, so a 10 MiB task holds 10.
    tasks = spark_packing.plan_tasks([1024] * 1000, PACKING)
    assert len(tasks) == 100
    assert {len(task) for task in tasks} == {10}


def test_objects_exactly_at_the_target_fill_a_task_each() -> None:
    sizes = [10 * MIB] * 4
    tasks = spark_packing.plan_tasks(sizes, PACKING)
    assert sorted(len(task) for task in tasks) == [1, 1, 1, 1]


def test_on_one_core_objects_are_packed_largest_first_until_the_next_would_overflow() -> None:
    # Spark's FilePartition, kept on one core (one task a wave): 6 MiB (costing 7) then 2 MiB
    # (7 + 2 <= 10) share a task, which has cost 10; the next 2 MiB (10 + 2 > 10) opens a new one.
    sizes = [2 * MIB, 6 * MIB, 2 * MIB, 1 * MIB]
    packing = spark_packing.TaskPacking(max_bytes=10 * MIB, open_cost=MIB, min_tasks=1)
    assert _sizes(spark_packing.plan_tasks(sizes, packing), sizes) == [
        [6 * MIB, 2 * MIB],
        [2 * MIB, MIB],
    ]


def test_the_target_is_lowered_so_every_core_reads() -> None:
    # 8 objects of 1 MiB cost 16 MiB: under one 128 MiB target, yet 4 cores get 4 tasks.
    packing = spark_packing.TaskPacking(max_bytes=128 * MIB, open_cost=MIB, min_tasks=4)
    tasks = spark_packing.plan_tasks([MIB] * 8, packing)
    assert sorted(len(task) for task in tasks) == [2, 2, 2, 2]


def test_there_are_at_least_as_many_tasks_as_cores_when_there_are_as_many_objects() -> None:
    # Largest first leaves the big object's task alone and the rest in one: the least loaded
    # task takes each object instead.
    sizes = [9 * MIB, MIB, MIB, MIB]
    packing = spark_packing.TaskPacking(max_bytes=128 * MIB, open_cost=0, min_tasks=3)
    tasks = spark_packing.plan_tasks(sizes, packing)
    assert len(tasks) == 3
    assert sorted(len(task) for task in tasks) == [1, 1, 2]
    two = spark_packing.plan_tasks([MIB, MIB], packing)
    assert sorted(len(task) for task in two) == [1, 1]


def test_a_last_part_filled_task_is_dealt_out_so_that_every_wave_fills_the_cores() -> None:
    # 100 objects of 800 KiB to 1 MiB on 2 cores: Spark's fill makes two tasks of the per-core
    # target and a third of what is left, which runs alone in a second wave.
    sizes = [800 * 2**10 + (i * 2311) % (224 * 2**10) for i in range(100)]
    packing = spark_packing.TaskPacking(max_bytes=128 * MIB, open_cost=64 * 2**10, min_tasks=2)
    # Spark's fill at the per-core target, as one core packs it: three tasks.
    per_core = spark_packing.TaskPacking(
        max_bytes=sum(size + packing.open_cost for size in sizes) // 2,
        open_cost=64 * 2**10,
        min_tasks=1,
    )
    assert len(spark_packing.plan_tasks(sizes, per_core)) == 3
    tasks = spark_packing.plan_tasks(sizes, packing)
    assert len(tasks) == 2
    costs = [sum(sizes[i] + packing.open_cost for i in task) for task in tasks]
    assert max(costs) - min(costs) <= max(sizes) + packing.open_cost


@pytest.mark.parametrize("cores", [2, 3, 8])
def test_tasks_come_in_a_multiple_of_the_cores_each_of_even_cost_and_within_the_target(
    cores: int,
) -> None:
    for seed in range(30):
        sizes = [(i * 7919 + seed * 104729) % (12 * MIB) for i in range(40 + seed * 17)]
        packing = spark_packing.TaskPacking(max_bytes=10 * MIB, open_cost=MIB, min_tasks=cores)
        tasks = spark_packing.plan_tasks(sizes, packing)
        assert sorted(i for task in tasks for i in task) == list(range(len(sizes)))
        assert len(tasks) % cores == 0
        assert all(len(task) == 1 or sum(sizes[i] for i in task) <= 10 * MIB for task in tasks)
        costs = [sum(sizes[i] + MIB for i in task) for task in tasks]
        assert max(costs) - min(costs) <= max(sizes) + MIB


def test_without_an_even_deal_within_the_target_the_tasks_are_spark_s_fill(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No even deal tried: what is left is the fill, three tasks on two cores.
    monkeypatch.setattr(spark_packing, "BALANCING_TRIES", 0)
    sizes = [6 * MIB, 5 * MIB, 5 * MIB, 4 * MIB]
    packing = spark_packing.TaskPacking(max_bytes=10 * MIB, open_cost=0, min_tasks=2)
    assert _sizes(spark_packing.plan_tasks(sizes, packing), sizes) == [
        [6 * MIB],
        [5 * MIB, 5 * MIB],
        [4 * MIB],
    ]


@pytest.mark.parametrize(
    ("text", "size"),
    [("134217728b", 128 * MIB), ("4MB", 4 * MIB), ("64k", 65536), ("1024", 1024), ("1g", 2**30)],
)
def test_spark_size_settings_are_read_in_bytes(text: str, size: int) -> None:
    assert spark_packing.byte_size(text) == size


def test_a_size_setting_that_is_not_a_size_is_refused() -> None:
    with pytest.raises(ValueError, match="not a size"):
        spark_packing.byte_size("lots")


def test_the_session_s_settings_make_the_packing(spark: Any) -> None:
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16m")
    spark.conf.set("spark.sql.files.openCostInBytes", "65536")
    try:
        packing = spark_packing.session_packing(spark)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
    assert packing == spark_packing.TaskPacking(
        16 * MIB, 65536, spark.sparkContext.defaultParallelism
    )
    assert spark_packing.session_packing(spark) == spark_packing.TaskPacking(
        spark_packing.MAX_PARTITION_BYTES,
        spark_packing.OPEN_COST_BYTES,
        spark.sparkContext.defaultParallelism,
    )


def test_a_probe_job_finds_the_default_parallelism_where_there_is_no_spark_context(
    spark: Any,
) -> None:
    assert spark_packing.probed_parallelism(spark) == spark.sparkContext.defaultParallelism


def test_each_object_is_read_in_the_task_planned_for_it(spark: Any) -> None:
    listed = [StreamObject(f"object-{i}", (i * 37) % 5 * MIB, None) for i in range(40)]
    planned = spark_packing.planned_objects(spark, listed, PACKING)
    tasks = spark_packing.plan_tasks([o.size for o in listed], PACKING)
    expected = {listed[i].location: n for n, task in enumerate(tasks) for i in task}
    assert len(set(expected.values())) > 2
    rows = planned.select("location", "task", F.spark_partition_id().alias("partition")).collect()
    assert planned.rdd.getNumPartitions() == len(tasks)
    assert {row["location"]: row["partition"] for row in rows} == expected
    assert all(row["task"] == row["partition"] for row in rows)
