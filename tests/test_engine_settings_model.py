"""The settings model, its route to the compiled code, its stubs and its table in docs/engine.md agree.

Issue 21: one name from the profile file to the C struct field. Each check is a function of the model,
so a test can also show that a field added to the model without the rest fails it.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, create_model

from engine_ext.engine.settings import (
    FACADE_FIELDS,
    SEARCH_STATE_FIELDS,
    SETTINGS_GROUPS,
    STRATEGIC_STATE_FIELDS,
    EngineSettings,
    FearSettings,
    SearchParams,
    StrategicParams,
)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "engine.md"
# Struct fields the fill functions work out rather than copy: our flag's square at the root.
DERIVED_STRUCT_FIELDS = {"flag_sq"}


def route_problems(model: type[BaseModel]) -> list[str]:
    """Settings that reach no engine code, and engine parameters that are no setting."""
    problems = []
    search = {f.name for f in dataclasses.fields(SearchParams)} - SEARCH_STATE_FIELDS
    strategic = {f.name for f in dataclasses.fields(StrategicParams)} - STRATEGIC_STATE_FIELDS
    settings = set(model.model_fields)
    routed = search | strategic | FACADE_FIELDS
    for name in sorted(settings - routed):
        problems.append(f"{name}: in the settings but neither in SearchParams, StrategicParams nor FACADE_FIELDS")
    for name in sorted(routed - settings):
        problems.append(f"{name}: an engine parameter that is no settings field")
    for name in sorted(search & strategic):
        problems.append(f"{name}: both in SearchParams and StrategicParams")
    return problems


def group_problems(model: type[BaseModel]) -> list[str]:
    """Every field in exactly one group (the flat model adds only ``engine``)."""
    owner: dict[str, str] = {}
    problems = []
    for group in SETTINGS_GROUPS:
        for name in group.model_fields:
            if name in owner:
                problems.append(f"{name}: in {owner[name]} and {group.__name__}")
            owner[name] = group.__name__
    for name in sorted(set(model.model_fields) - set(owner) - {"engine"}):
        problems.append(f"{name}: in no group")
    return problems


def docs_tables(text: str) -> dict[str, set[str]]:
    """docs/engine.md's settings section: the backticked names of each ``### title (`Group`...)`` table."""
    section = text.split("## Settings (`EngineSettings`)", 1)[1].split("\n## ", 1)[0]
    tables: dict[str, set[str]] = {}
    current = None
    for line in section.splitlines():
        heading = re.match(r"### .*\(`(\w+)`", line)
        if heading:
            current = heading.group(1)
            tables[current] = set()
        elif current and line.startswith("| `"):
            first = line.split("|")[1]
            tables[current] |= set(re.findall(r"`([\w.]+)`", first))
    return tables


def docs_problems(model: type[BaseModel], text: str) -> list[str]:
    tables = docs_tables(text)
    problems = []
    for group in SETTINGS_GROUPS:
        expected = set()
        for name in group.model_fields:
            if name == "fear":
                expected |= {f"fear.{sub}" for sub in FearSettings.model_fields}
            else:
                expected.add(name)
        if group is SETTINGS_GROUPS[-1]:
            # Fields added on the flat model itself (as a careless addition would be) belong in a group.
            expected |= set(model.model_fields) - set(EngineSettings.model_fields)
        listed = tables.get(group.__name__, set())
        problems += [f"{name}: no row in docs/engine.md's {group.__name__} table" for name in sorted(expected - listed)]
        problems += [f"{name}: a row in docs/engine.md's {group.__name__} table but no such setting"
                     for name in sorted(listed - expected)]
    return problems


def struct_fields(pxd: str, struct: str) -> set[str]:
    text = (ROOT / "engine_ext" / "engine" / pxd).read_text()
    body = text.split(f"ctypedef struct {struct}:", 1)[1]
    names = set()
    for line in body.splitlines()[1:]:
        if not line.startswith("    "):
            break
        match = re.match(r"\s+(?:int|double|bint)\s+(\w+)", line)
        if match:
            names.add(match.group(1))
    return names


def stub_keywords(pyi: str, cls: str) -> set[str]:
    tree = ast.parse((ROOT / "engine_ext" / "engine" / pyi).read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return {a.arg for a in item.args.kwonlyargs}
    raise AssertionError(f"no {cls}.__init__ in {pyi}")


def test_every_setting_reaches_the_engine_under_its_own_name() -> None:
    assert route_problems(EngineSettings) == []
    assert group_problems(EngineSettings) == []


def test_the_docs_table_lists_every_setting_in_its_group() -> None:
    assert docs_problems(EngineSettings, DOCS.read_text()) == []


def test_the_compiled_structs_carry_the_settings_names() -> None:
    search = {f.name for f in dataclasses.fields(SearchParams)}
    strategic = {f.name for f in dataclasses.fields(StrategicParams)}
    assert struct_fields("search.pxd", "SearchConfig") - DERIVED_STRUCT_FIELDS <= search
    assert struct_fields("strategic.pxd", "StrategicConfig") == strategic


def test_the_stubs_name_the_settings() -> None:
    # The test views of the compiled units take engine settings by the settings' names.
    settings = set(EngineSettings.model_fields)
    history = {"public", "approached", "moved"}
    assert stub_keywords("evaluation.pyi", "ValuesView") - history <= settings
    # Besides the settings: the move's fears and the beliefs' matrix (the belief model's, not a setting).
    assert stub_keywords("knowledge.pyi", "KnowledgeView") - history - {"fears", "belief_matrix"} <= settings


def test_a_setting_added_without_its_route_and_docs_fails() -> None:
    # What a new field on the model alone (no parameter, no struct field, no row in the docs) does.
    grown = create_model("Grown", __base__=EngineSettings, new_knob=(float, Field(0.0)))
    assert route_problems(grown) == [
        "new_knob: in the settings but neither in SearchParams, StrategicParams nor FACADE_FIELDS"]
    assert group_problems(grown) == ["new_knob: in no group"]
    assert docs_problems(grown, DOCS.read_text()) == ["new_knob: no row in docs/engine.md's TimeUse table"]


@pytest.mark.parametrize("group", SETTINGS_GROUPS, ids=lambda g: g.__name__)
def test_each_group_is_a_model_of_its_own(group: type[BaseModel]) -> None:
    # A group validates alone and rejects a key of another group: the groups do not overlap.
    group()
    other = next(name for name in EngineSettings.model_fields if name not in group.model_fields and name != "engine")
    with pytest.raises(ValueError, match=other):
        group.model_validate({other: 0})


def test_a_removed_setting_is_named_as_removed() -> None:
    # A profile written before issue 21 that still sets a knob the lab removed gets told why.
    with pytest.raises(ValueError, match="suspect_odds: removed in issue 21"):
        EngineSettings.model_validate({"suspect_odds": True})
