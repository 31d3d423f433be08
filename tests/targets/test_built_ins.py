"""Which built-in targets count as installed: every module they import must be findable."""

from plugpull.targets import BUILT_INS, BuiltIn


def test_a_dotted_module_whose_parent_package_is_missing_is_not_installed():
    # find_spec("google.adk") imports "google" first and raises when it is missing.
    assert not BuiltIn(name="x", module="plugpull_no_such_package.adk", extra="x", variants=()).installed()


def test_every_further_module_must_be_present_too():
    assert BuiltIn(name="x", module="plugpull", extra="x", variants=()).installed()
    assert not BuiltIn(
        name="x", module="plugpull", also=("plugpull_no_such_package",), extra="x", variants=()
    ).installed()


def test_each_new_framework_names_its_extra_and_the_distribution_it_announces():
    frameworks = {
        name: ({t.framework for t in BUILT_INS[name].variants}, BUILT_INS[name].extra)
        for name in (
            "langgraph-functional",
            "google-adk",
            "google-adk-approval",
            "dbos",
            "pydantic-ai",
            "pydantic-ai-approval",
            "crewai",
        )
    }
    assert frameworks == {
        "langgraph-functional": ({"langgraph"}, "langgraph"),
        "google-adk": ({"google-adk"}, "google-adk"),
        "google-adk-approval": ({"google-adk"}, "google-adk"),
        "dbos": ({"dbos"}, "dbos"),
        "pydantic-ai": ({"pydantic-ai-slim"}, "pydantic-ai"),
        "pydantic-ai-approval": ({"pydantic-ai-slim"}, "pydantic-ai"),
        "crewai": ({"crewai"}, "crewai"),
    }


def test_a_program_neither_on_path_nor_named_by_its_variable_is_missing_and_says_how_to_install_it(monkeypatch):
    monkeypatch.delenv("PLUGPULL_NO_SUCH_PROGRAM", raising=False)
    built_in = BuiltIn(
        name="x", module="json", extra="x", variants=(), programs=(("no-such-program", "npm install no-such"),)
    )
    assert built_in.installed()
    assert built_in.missing_program() == "no-such-program is not on PATH (npm install no-such)"
    monkeypatch.setenv("PLUGPULL_NO_SUCH_PROGRAM", "/opt/no-such-program")
    assert built_in.missing_program() is None
