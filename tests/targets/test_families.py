"""A family module declares its framework once; its built-ins' commands are written from their options."""

import importlib
import pkgutil

import pytest

from plugpull.notes import Note
from plugpull.targets import FAMILIES
from plugpull.targets.families import Family, Variant

TOY = Family(name="toy", framework="toy-dist", module="toy", extra="toy-extra", also=("toy_db",))
SHARED = Note(text="shared", condition="always", holds=lambda r: True)
OWN = Note(text="own", condition="always", holds=lambda r: True)


def test_each_flag_option_is_passed_as_a_dashed_flag_after_the_variants_own_arguments():
    (target,) = TOY.built_in(
        "toy",
        "toy_agent",
        flags=("key", "app_version"),
        variants=[Variant(args=("positional",), options={"app_version": "changed", "mode": "x", "key": "none"})],
    ).variants
    assert target.argv[1:] == (
        "-m",
        "plugpull.targets.toy_agent",
        "positional",
        "--key",
        "none",
        "--app-version",
        "changed",
    )
    # The label names the options in the order the variant gave them, flags or not.
    assert target.label("1.0") == "toy-dist 1.0 app_version=changed mode=x key=none"


def test_an_option_a_variant_does_not_carry_is_not_passed():
    (target,) = TOY.built_in("toy", "toy_agent", flags=("key",), variants=[Variant(options={"mode": "x"})]).variants
    assert target.argv[1:] == ("-m", "plugpull.targets.toy_agent")


def test_a_variant_carries_the_built_ins_notes_unless_it_names_its_own():
    built_in = TOY.built_in(
        "toy", "toy_agent", variants=[Variant(), Variant(notes=(OWN,)), Variant(notes=())], notes=(SHARED,)
    )
    assert [v.notes for v in built_in.variants] == [(SHARED,), (OWN,), ()]


def test_the_family_gives_every_variant_its_framework_and_the_built_in_its_module_extra_and_imports():
    built_in = TOY.built_in("toy-approval", "toy_agent", scenario="resume-after-approval", result_ignore=("id",))
    assert (built_in.name, built_in.module, built_in.extra, built_in.also) == (
        "toy-approval",
        "toy",
        "toy-extra",
        ("toy_db",),
    )
    (target,) = built_in.variants
    assert (target.name, target.framework, target.scenario, target.result_ignore) == (
        "toy-approval",
        "toy-dist",
        "resume-after-approval",
        ("id",),
    )


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__.rsplit(".", 1)[-1])
def test_every_family_module_declares_its_framework_built_ins_and_upgrade(family):
    assert isinstance(family.FAMILY, Family)
    assert family.BUILT_INS, "a family without a built-in target"
    for built_in in (*family.BUILT_INS, *([family.UPGRADE] if family.UPGRADE else [])):
        # A built-in may need more than its family (a database driver: the -postgresql targets), never less.
        assert (built_in.module, built_in.extra, built_in.also[: len(family.FAMILY.also)]) == (
            family.FAMILY.module,
            family.FAMILY.extra,
            family.FAMILY.also,
        )
        assert {v.framework for v in built_in.variants} == {family.FAMILY.framework}


def test_a_built_in_adds_its_own_imports_to_the_familys_and_names_the_server_it_needs():
    built_in = TOY.built_in("toy-postgresql", "toy_agent", also=("asyncpg",), server="TOY_URL")
    assert (built_in.also, built_in.server) == (("toy_db", "asyncpg"), "TOY_URL")
    assert TOY.built_in("toy", "toy_agent").server is None


def test_every_module_under_families_is_a_family_the_registry_lists():
    # A module the registry does not list would declare targets nobody can run.
    listed = {f.__name__ for f in FAMILIES}
    package = importlib.import_module("plugpull.targets.families")
    found = {f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)}
    assert found == listed
