"""The general check of schemaless JSON (parse the row, take its variant shape) runs only for rows the cheap
text proof refuses: no projection of the plan holds it as a common subexpression, which Spark would compute
for every row up front.

Spark's own subexpression analysis (``EquivalentExpressions``, as whole-stage code generation runs it) over
each projection of the good frame's physical plan, for a record task's plan and a DataFrame task's (whose
general check also takes objects with fewer fields). Naming the row's shape twice in one projection once
made a clean batch's conversion cost 2.5 times as much (250,000 cached rows into ``noop``: 2.5 against 1.0
CPU-seconds).
"""

from __future__ import annotations

import pytest

from connect_spark.columnar.plan import compile_plan
from connect_spark.streaming.raw_batch import RAW_DDL
from tests.integration.frame_batches import SCHEMALESS, plan_connector, raw_row

PARSES = ("schemaofvariant", "parsejson", "jsontostructs")


def _common_subexpressions(spark, frame) -> list[str]:
    """What Spark would compute up front in each projection of ``frame``'s physical plan."""
    jvm = spark._jvm
    found: list[str] = []

    def visit(node) -> None:
        if node.nodeName() == "Project":
            equivalent = jvm.org.apache.spark.sql.catalyst.expressions.EquivalentExpressions(False)
            expressions = node.projectList().iterator()
            while expressions.hasNext():
                equivalent.addExprTree(expressions.next(), getattr(equivalent, "addExprTree$default$2")())
            common = equivalent.getCommonSubexpressions().iterator()
            while common.hasNext():
                found.append(common.next().toString())
        children = node.children().iterator()
        while children.hasNext():
            visit(children.next())

    visit(frame._jdf.queryExecution().executedPlan())
    return found


@pytest.mark.parametrize("frame_task", [False, True], ids=["record task", "DataFrame task"])
def test_no_projection_parses_every_row_up_front(spark, tmp_path, frame_task):
    connector, worker = plan_connector(tmp_path, **SCHEMALESS)
    plan = compile_plan(connector, worker, frame_task=frame_task)
    assert plan is not None
    rows = [raw_row(i, ('{"id":%d,"user":"u-%d","amount":%d.5,"note":"n"}' % (i, i, i)).encode()) for i in range(20)]
    good = plan.apply(spark.createDataFrame(rows, RAW_DDL)).good
    common = _common_subexpressions(spark, good)
    assert common  # the analysis ran (the key's and value's string casts are shared)
    assert [c for c in common if any(p in c.lower().replace("_", "") for p in PARSES)] == []
