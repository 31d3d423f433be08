"""The package index client (report/harness/package_index.py): a project's releases and upload times from the
JSON simple API (PEP 691/700), asked of a tiny index on loopback, and which index the configuration names."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path

import pytest
from fake_index import served

from plugpull.report.harness import package_index
from plugpull.report.harness.package_index import Index, IndexProblem, configured


def page(files: list[tuple[str, str | None]], *, versions: list[str] | None = None, api: str = "1.1") -> dict:
    data: dict = {"meta": {"api-version": api}, "name": "demo-pkg", "files": []}
    for filename, uploaded in files:
        entry = {"filename": filename, "url": f"files/{filename}", "hashes": {"sha256": "0" * 64}}
        if uploaded is not None:
            entry["upload-time"] = uploaded
        data["files"].append(entry)
    if versions is not None:
        data["versions"] = versions
    return data


PEP_700 = page(
    [
        ("demo_pkg-1.0.tar.gz", "2024-01-02T10:00:00.123456Z"),
        ("demo_pkg-1.0-py3-none-any.whl", "2024-01-01T09:30:00Z"),  # the earliest file dates the release
        ("demo_pkg-1.1-py3-none-any.whl", "2024-03-04T08:00:00.5Z"),
    ],
    versions=["1.0", "1.1", "2.0"],  # 2.0's files were deleted: a release with no date
)


def test_a_pep_700_index_gives_the_releases_and_the_earliest_upload_of_each():
    with served({"demo-pkg": PEP_700}) as url:
        project = Index(url).project("Demo_Pkg")  # asked by its normalized name
    assert url.requests[0]["path"] == "/simple/demo-pkg/"
    assert url.requests[0]["headers"]["Accept"] == "application/vnd.pypi.simple.v1+json"
    assert project.versions == ["1.0", "1.1", "2.0"]
    assert project.upload_time("1.0") == dt.datetime(2024, 1, 1, 9, 30, tzinfo=dt.timezone.utc)
    assert project.upload_time("1.1") == dt.datetime(2024, 3, 4, 8, 0, 0, 500000, tzinfo=dt.timezone.utc)
    with pytest.raises(IndexProblem, match=r"^http://127.0.0.1:\d+/simple/ gives no upload time for demo-pkg 2.0$"):
        project.upload_time("2.0")


def test_an_index_at_api_1_0_gives_the_versions_of_its_file_names_and_no_dates():
    old = page(
        [("demo_pkg-1.0-py3-none-any.whl", None), ("demo_pkg-1.2.tar.gz", None), ("demo_pkg-1.3.exe", None)], api="1.0"
    )
    with served({"demo-pkg": old}) as url:
        project = Index(url).project("demo-pkg")
    assert project.versions == ["1.0", "1.2"] and project.uploaded == {}


def test_an_index_that_answers_html_only_is_one_line():
    with served({"demo-pkg": b"<html></html>"}, content_type="text/html") as url, pytest.raises(IndexProblem) as raised:
        Index(url).project("demo-pkg")
    assert str(raised.value) == (
        f"{url}demo-pkg/ (default) answered text/html, not the JSON simple API (PEP 691, "
        "application/vnd.pypi.simple.v1+json), which plugpull reads releases and upload times from"
    )


def test_a_project_the_index_lacks_an_index_that_is_down_and_a_page_that_is_not_pep_691_are_one_line_each():
    with served(
        {"broken": {"meta": {"api-version": "1.1"}}, "future": {"meta": {"api-version": "2.0"}, "files": []}}
    ) as url:
        for name, says in (
            ("nope", "nope/ (default): no such project"),
            ("broken", "broken/: not a PEP 691 project page (no files list)"),
            ("future", "future/: simple API version 2.0; plugpull reads version 1.x"),
        ):
            with pytest.raises(IndexProblem) as raised:
                Index(url).project(name)
            assert str(raised.value) == f"{url}{says}"
    with pytest.raises(
        IndexProblem, match=r"^cannot reach the package index http://127.0.0.1:9/simple/ \(PIP_INDEX_URL\): "
    ):
        Index("http://127.0.0.1:9/simple/", "PIP_INDEX_URL").project("demo-pkg")
    with pytest.raises(IndexProblem, match="asks an http\\(s\\) index only"):
        Index("file:///srv/simple/").project("demo-pkg")


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown():
    with served({"demo-pkg": PEP_700}, auth=("ci", "s3cret")) as url:
        secret = url.replace("http://", "http://ci:s3cret@")
        index = Index(secret, "UV_DEFAULT_INDEX")
        assert index.project("demo-pkg").versions == ["1.0", "1.1", "2.0"]
        assert index.shown == url and "s3cret" not in index.project_shown("demo-pkg") + repr(index)
        with pytest.raises(IndexProblem) as raised:
            Index(url.replace("http://", "http://ci:wrong@")).project("demo-pkg")
    assert str(raised.value) == f"{url}demo-pkg/ (default): HTTP 401 Unauthorized" and "wrong" not in str(raised.value)


def test_a_redirect_to_another_host_does_not_carry_the_credentials():
    with served({"demo-pkg": PEP_700}) as elsewhere, served({}, auth=("ci", "s3cret"), redirect=elsewhere) as url:
        assert Index(url.replace("http://", "http://ci:s3cret@")).project("demo-pkg").versions == ["1.0", "1.1", "2.0"]
    assert "Authorization" in url.requests[0]["headers"]
    assert [r["path"] for r in elsewhere.requests] == ["/simple/demo-pkg/"]
    assert "Authorization" not in elsewhere.requests[0]["headers"]


def test_uv_is_pointed_at_the_same_index_through_its_environment():
    index = Index("https://user:pw@mirror.example/simple/", "PIP_INDEX_URL")
    env = index.uv_environment({"PATH": "/bin", "UV_INDEX_URL": "https://elsewhere/simple/"})
    # UV_DEFAULT_INDEX outranks UV_INDEX_URL in uv; in the environment a password stays out of the process list.
    assert env == {"PATH": "/bin", "UV_INDEX_URL": "https://elsewhere/simple/", "UV_DEFAULT_INDEX": index.url}


@pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv")
def test_uv_pip_compile_asks_the_configured_index(tmp_path):
    # A page with no files: uv finds no version, but it asked the loopback index, not PyPI.
    with served({"demo-pkg": page([], versions=[])}) as url:
        (tmp_path / "r.in").write_text("demo-pkg\n")
        run = subprocess.run(
            ["uv", "pip", "compile", "--no-cache", "r.in"],
            cwd=tmp_path,
            env=Index(url).uv_environment(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode != 0 and any(r["path"] == "/simple/demo-pkg/" for r in url.requests), run.stderr


# --- which index ---------------------------------------------------------------------------------------------


def test_the_environment_comes_first_uv_default_index_then_uv_index_url_then_pip_index_url(tmp_path):
    env = {"UV_DEFAULT_INDEX": "https://a/simple/", "UV_INDEX_URL": "https://b/simple/", "PIP_INDEX_URL": "https://c/"}
    assert configured(env, home=tmp_path) == Index("https://a/simple/", "UV_DEFAULT_INDEX")
    assert configured({**env, "UV_DEFAULT_INDEX": ""}, home=tmp_path) == Index("https://b/simple/", "UV_INDEX_URL")
    assert configured({"PIP_INDEX_URL": "https://c/"}, home=tmp_path) == Index("https://c/", "PIP_INDEX_URL")
    assert configured({"UV_DEFAULT_INDEX": "mirror=https://m/simple/"}, home=tmp_path).url == "https://m/simple/"
    assert configured({}, home=tmp_path) == Index(package_index.PYPI, "default")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_then_uv_configuration_the_repository_first_then_the_user_then_pip_configuration(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    pip_conf = write(home / ".config" / "pip" / "pip.conf", "[global]\nindex-url = https://pip/simple/\n")
    assert configured({}, start=repo, home=home) == Index("https://pip/simple/", str(pip_conf))
    user = write(home / ".config" / "uv" / "uv.toml", 'index-url = "https://uv-user/simple/"\n')
    assert configured({}, start=repo, home=home) == Index("https://uv-user/simple/", str(user))
    project = write(
        repo / "pyproject.toml",
        '[tool.uv]\n[[tool.uv.index]]\nurl = "https://x/"\n[[tool.uv.index]]\nurl = "https://uv-repo/simple/"\ndefault = true\n',
    )
    assert configured({}, start=repo / "findings" / "demo" / "pins", home=home) == Index(
        "https://uv-repo/simple/", str(project)
    )
    own = write(repo / "uv.toml", '[pip]\nindex-url = "https://uv-pip/simple/"\n')  # uv.toml before pyproject.toml
    assert configured({}, start=repo, home=home) == Index("https://uv-pip/simple/", str(own))
    assert configured({"PIP_INDEX_URL": "https://env/"}, start=repo, home=home).source == "PIP_INDEX_URL"
    named = write(tmp_path / "ci.toml", 'index-url = "https://named/simple/"\n')
    assert configured({"UV_CONFIG_FILE": str(named)}, start=repo, home=home) == Index(
        "https://named/simple/", str(named)
    )
    assert configured({"UV_NO_CONFIG": "1"}, start=repo, home=home) == Index("https://pip/simple/", str(pip_conf))


def test_a_later_pip_configuration_file_wins_as_in_pip(tmp_path):
    home = tmp_path / "home"
    write(home / ".pip" / "pip.conf", "[global]\nindex-url = https://legacy/\n")
    chosen = write(tmp_path / "pip.conf", "[global]\nindex-url = https://named/\n[install]\nindex-url = https://no/\n")
    assert configured({"PIP_CONFIG_FILE": str(chosen)}, home=home) == Index("https://named/", str(chosen))
    assert configured({}, home=home).url == "https://legacy/"


@pytest.mark.network
def test_pypi_serves_the_json_simple_api_with_upload_times():
    project = Index(package_index.PYPI).project("six")
    assert {"1.16.0", "1.17.0"} <= set(project.versions)
    assert project.upload_time("1.16.0").date() == dt.date(2021, 5, 5)
