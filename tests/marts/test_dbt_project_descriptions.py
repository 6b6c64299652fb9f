"""The dbt project describes itself in the Dagster UI: read from the parsed manifest.

* every data test (generic or singular) says what its failure means, and the
  asset check Dagster makes of it shows that text;
* every model has Dagster owners (``config.meta.dagster.owners``, read by
  ``DagsterDbtTranslator.get_owners``), each an email or ``team:`` name;
* every column of every model has a ``data_type`` and a description (the
  column schema dagster-dbt shows).

No database: ``prepare_manifest()`` only parses, and the definitions only load.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sms_pipeline.definitions import defs as pipeline_defs
from sms_pipeline.marts.project import PARSE_ONLY_DATABASE, manifest_in_database, prepare_manifest


@pytest.fixture(scope="module")
def nodes() -> list[dict[str, Any]]:
    manifest = json.loads(prepare_manifest().read_text())
    return [node for node in manifest["nodes"].values() if node["package_name"] == "sms_marts"]


def _of_type(nodes: list[dict[str, Any]], resource_type: str) -> list[dict[str, Any]]:
    found = [node for node in nodes if node["resource_type"] == resource_type]
    assert found, f"the manifest has no {resource_type} nodes"
    return found


def test_every_data_test_says_what_its_failure_means(nodes):
    tests = _of_type(nodes, "test")
    undescribed = sorted(t["name"] for t in tests if not (t.get("description") or "").strip())
    assert not undescribed, f"data tests without a description: {undescribed}"
    # What the UI shows: the check made of each test carries the test's description.
    graph = pipeline_defs.resolve_asset_graph()
    shown = {key.name: graph.get_check_spec(key).description for key in graph.asset_check_keys}
    unshown = sorted(t["name"] for t in tests if shown.get(t["name"]) != t["description"])
    assert not unshown, f"dbt tests whose asset check does not show their description: {unshown}"


def test_singular_tests_are_described_too(nodes):
    singular = [t for t in _of_type(nodes, "test") if "test_metadata" not in t]
    assert {t["name"] for t in singular} >= {"cost_daily_ties_to_messages", "delivery_by_class_outcomes_add_up"}


def test_every_model_has_owners(nodes):
    for model in _of_type(nodes, "model"):
        owners = ((model.get("meta") or {}).get("dagster") or {}).get("owners")
        assert owners, f"model {model['name']} has no meta.dagster.owners"
        # Dagster refuses any other form of owner.
        bad = [o for o in owners if not (o.startswith("team:") and len(o) > 5) and "@" not in o]
        assert not bad, f"model {model['name']}: owners must be emails or team:<name>, got {bad}"


def test_every_column_of_every_model_has_a_type_and_a_description(nodes):
    missing = sorted(
        f"{model['name']}.{name}: {', '.join(what for what in ('data_type', 'description') if not column.get(what))}"
        for model in _of_type(nodes, "model")
        for name, column in model["columns"].items()
        if not (column.get("data_type") and column.get("description"))
    )
    assert not missing, f"columns lacking a type or description: {missing}"


def test_every_model_documents_its_columns(nodes):
    undocumented = sorted(model["name"] for model in _of_type(nodes, "model") if not model["columns"])
    assert not undocumented, f"models without documented columns: {undocumented}"


def test_a_run_reads_its_models_in_the_database_it_built_in():
    manifest = json.loads(prepare_manifest().read_text())
    moved = manifest_in_database(manifest, 'sms "prod"')
    cost = moved["nodes"]["model.sms_marts.cost_daily"]
    assert cost["database"] == 'sms "prod"'
    assert cost["relation_name"] == '"sms ""prod"""."marts"."cost_daily"'
    [source] = [s for s in moved["sources"].values() if s["name"] == "outbound_message"]
    assert source["relation_name"] == '"sms ""prod"""."msg"."outbound_message"'
    # nothing else changes, and the parse-time manifest is left as it was
    assert {k: v for k, v in cost.items() if k not in ("database", "relation_name")} == {
        k: v for k, v in manifest["nodes"]["model.sms_marts.cost_daily"].items()
        if k not in ("database", "relation_name")}
    assert manifest["nodes"]["model.sms_marts.cost_daily"]["database"] == PARSE_ONLY_DATABASE
    tests = [n for n in moved["nodes"].values() if n["resource_type"] == "test"]
    assert tests and all(n["relation_name"] is None for n in tests)
