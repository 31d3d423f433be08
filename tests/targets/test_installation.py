"""How a missing framework is installed: pip for an installed plugpull, this checkout's uv groups in a checkout.
Pure reads of hand-written project files."""

from plugpull.targets.installation import CHECKOUT, install_command, project_of, requirement_name

PROJECT = {
    "project": {
        "name": "plugpull",
        "optional-dependencies": {
            "langgraph": ["langgraph>=1.0", "langgraph-checkpoint-sqlite>=3.0"],
            "dbos": ["dbos>=2.0"],
            "pydantic-ai": ["pydantic-ai-slim[dbos]>=1.0"],
            "crewai": ["crewai>=1.15"],
            "other": ["something-else"],
        },
    },
    "dependency-groups": {
        "dev": [{"include-group": "test"}, "langgraph==1.2.11", "langgraph-checkpoint-sqlite>=3.1,<3.2"],
        "more-frameworks": ["dbos", "pydantic_ai_slim[dbos]"],
    },
    "tool": {"uv": {"conflicts": [[{"extra": "crewai"}, {"group": "dev"}]]}},
}


def test_an_installed_package_is_told_to_install_its_extra_with_pip():
    assert install_command("dbos", None) == "pip install 'plugpull[dbos]'"


def test_a_checkout_is_told_the_uv_group_that_holds_the_extras_frameworks():
    assert install_command("dbos", PROJECT) == "uv sync --group more-frameworks"
    assert install_command("pydantic-ai", PROJECT) == "uv sync --group more-frameworks"
    assert install_command("langgraph", PROJECT) == "uv sync"


def test_an_extra_that_conflicts_with_the_dev_group_gets_an_environment_of_its_own():
    assert install_command("crewai", PROJECT).startswith(
        "UV_PROJECT_ENVIRONMENT=.venv-crewai uv sync --no-dev --extra crewai, then run plugpull as "
    )


def test_an_extra_in_no_group_is_synced_as_an_extra():
    assert install_command("other", PROJECT) == "uv sync --extra other"


def test_requirement_names_are_normalized_without_extras_or_versions():
    assert [requirement_name(r) for r in ("pydantic_ai_slim[dbos]>=1.0", "Google.ADK[db]", " dbos")] == [
        "pydantic-ai-slim",
        "google-adk",
        "dbos",
    ]


def test_a_directory_without_a_uv_lock_or_naming_another_project_is_not_a_checkout(tmp_path):
    assert project_of(tmp_path) is None
    (tmp_path / "uv.lock").write_text("")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')
    assert project_of(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "plugpull"\n')
    assert project_of(tmp_path) == {"project": {"name": "plugpull"}}


def test_this_checkout_is_one_and_says_more_frameworks_for_dbos():
    assert install_command("dbos", project_of(CHECKOUT)) == "uv sync --group more-frameworks"
