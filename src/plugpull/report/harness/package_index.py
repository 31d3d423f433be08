"""The package index, asked over its JSON simple API: a project's releases and when each was uploaded.

One request per project: ``GET <index>/<normalized name>/`` with ``Accept: application/vnd.pypi.simple.v1+json``
(PEP 691, https://peps.python.org/pep-0691/). Its ``versions`` (PEP 700, API 1.1,
https://peps.python.org/pep-0700/) are the releases; an index at API 1.0 has none, and the versions are read from
the file names instead. A release's upload time is the earliest ``upload-time`` (PEP 700) of its files, absent
when the index gives none: a sweep, which resolves each release as of its upload day, refuses an index that dates
none of the releases asked for, in one line, before anything runs (report/harness/sweep.py, ``listed``). An
index that answers HTML only (PEP 503, no upload times) is refused the same way.

Which index (first found; docs/report.md, "Sweeps"):

1. the environment: ``UV_DEFAULT_INDEX``, ``UV_INDEX_URL`` (uv's older name for it), ``PIP_INDEX_URL``;
2. uv's configuration, as uv finds it (https://docs.astral.sh/uv/concepts/configuration-files/): the file
   ``UV_CONFIG_FILE`` names, else the first ``uv.toml`` or ``pyproject.toml`` with ``[tool.uv]`` from the repository
   up, then the user's ``uv.toml`` (``$XDG_CONFIG_HOME/uv``, ``~/.config/uv``), then ``/etc/uv/uv.toml``; none when
   ``UV_NO_CONFIG`` is set. In a file: ``[pip] index-url``, else the ``[[index]]`` with ``default = true``, else
   ``index-url``;
3. pip's configuration (https://pip.pypa.io/en/stable/topics/configuration/): ``[global] index-url`` of
   ``/etc/pip.conf``, the user's ``pip.conf``, then the file ``PIP_CONFIG_FILE`` names (a later file wins, as in pip);
4. PyPI, https://pypi.org/simple/.

uv itself reads neither ``PIP_INDEX_URL`` nor pip.conf (https://docs.astral.sh/uv/pip/compatibility/): every
``uv pip`` plugpull runs against an index (a sweep's and a bundle's compile, an environment's dry run and sync)
gets the chosen one as ``UV_DEFAULT_INDEX`` (:meth:`Index.uv_environment`; uv ranks it above ``UV_INDEX_URL``
and its files), so the releases listed, the locks compiled and the files installed come from one index. Credentials in the URL
(``https://user:password@host/simple``) are sent as HTTP basic auth and never shown: :attr:`Index.shown` drops them.
"""

from __future__ import annotations

import base64
import configparser
import datetime as dt
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

PYPI = "https://pypi.org/simple/"
JSON_API = "application/vnd.pypi.simple.v1+json"
TIMEOUT = 60.0


class IndexProblem(ValueError):
    """The index cannot answer what is asked (unreachable, no such project, not the JSON API): one line."""


def normalize(name: str) -> str:
    """A project name as the simple API spells it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _upload_time(text: Any) -> dt.datetime | None:
    """PEP 700's ``upload-time`` (``yyyy-mm-ddThh:mm:ss[.ffffff]Z``) in UTC; None when absent or malformed."""
    if not isinstance(text, str):
        return None
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)?$", text.strip())
    if match is None:
        return None
    when = dt.datetime.fromisoformat(match.group(1))
    if match.group(2):
        when = when.replace(microsecond=int(match.group(2)[:6].ljust(6, "0")))
    zone = match.group(3)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        when = when - sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return when.replace(tzinfo=dt.timezone.utc)


def _file_version(filename: str) -> str | None:
    """The version in a wheel's or an sdist's file name; None for anything else."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        if filename.endswith((".tar.gz", ".zip")):
            return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return None


@dataclass
class Project:
    """One project's page on an index: its releases, and the upload time of each the index dates."""

    name: str
    index: Index
    versions: list[str]
    uploaded: dict[str, dt.datetime] = field(default_factory=dict)

    def upload_time(self, version: str) -> dt.datetime:
        """When ``version``'s first file was uploaded; IndexProblem when the index does not say."""
        when = self.uploaded.get(version)
        if when is None:
            raise IndexProblem(f"{self.index.shown} gives no upload time for {self.name} {version}")
        return when


def parse_project(name: str, index: Index, data: Any) -> Project:
    """A PEP 691 JSON project page into a Project; IndexProblem when it is not one."""
    where = index.project_shown(name)
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexProblem(f"{where}: not a PEP 691 project page (no files list)")
    api = str((data.get("meta") or {}).get("api-version", ""))
    if not api.startswith("1."):
        raise IndexProblem(f"{where}: simple API version {api or '?'}; plugpull reads version 1.x")
    uploaded: dict[str, dt.datetime] = {}
    from_files: list[str] = []
    for entry in data["files"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
            continue
        version = _file_version(entry["filename"])
        if version is None:
            continue
        from_files.append(version)
        when = _upload_time(entry.get("upload-time"))
        if when is not None and (version not in uploaded or when < uploaded[version]):
            uploaded[version] = when
    listed = data.get("versions")
    versions = [str(v) for v in listed] if isinstance(listed, list) else list(dict.fromkeys(from_files))
    return Project(normalize(name), index, versions, uploaded)


@dataclass(frozen=True)
class Index:
    """A package index's simple API root and where it was configured."""

    url: str = field(repr=False)  # may hold credentials: :attr:`shown` is what is printed
    source: str = "default"

    @property
    def shown(self) -> str:
        """The URL without credentials (what progress lines, errors and sweep.json say)."""
        parts = urllib.parse.urlsplit(self.url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))

    def project_shown(self, name: str) -> str:
        """The project's page, as shown (no credentials)."""
        return self.shown.rstrip("/") + "/" + normalize(name) + "/"

    def uv_environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with this index as uv's default index: what every
        ``uv pip`` plugpull runs gets, so uv resolves from the index plugpull listed (uv reads no pip setting).
        In the environment rather than on the command line, where a password in the URL would be visible."""
        return {**(os.environ if base is None else base), "UV_DEFAULT_INDEX": self.url}

    def project(self, name: str) -> Project:
        """``name``'s page on this index (one request); IndexProblem, one line, for anything but a PEP 691 answer."""
        parts = urllib.parse.urlsplit(self.url)
        shown = self.project_shown(name)
        if parts.scheme not in ("http", "https"):
            raise IndexProblem(f"index {self.shown} ({self.source}): plugpull asks an http(s) index only")
        bare = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        request = urllib.request.Request(bare.rstrip("/") + "/" + normalize(name) + "/", headers={"Accept": JSON_API})
        if parts.username is not None:
            secret = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            # Unredirected: urllib copies ordinary headers to wherever a redirect points, another host included.
            request.add_unredirected_header("Authorization", "Basic " + base64.b64encode(secret.encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                kind = response.headers.get_content_type()
                body = response.read()
        except urllib.error.HTTPError as exc:
            why = "no such project" if exc.code == 404 else f"HTTP {exc.code} {exc.reason}"
            raise IndexProblem(f"{shown} ({self.source}): {why}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise IndexProblem(f"cannot reach the package index {self.shown} ({self.source}): {reason}") from None
        if kind != JSON_API:
            raise IndexProblem(
                f"{shown} ({self.source}) answered {kind}, not the JSON simple API (PEP 691, {JSON_API}), "
                "which plugpull reads releases and upload times from"
            )
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise IndexProblem(f"{shown}: not valid JSON ({exc})") from None
        return parse_project(name, self, data)


# --- which index -----------------------------------------------------------------------------------------


def _uv_file_index(data: Mapping[str, Any]) -> str | None:
    """The default index one uv configuration table sets (``[pip] index-url``, ``[[index]] default``, ``index-url``)."""
    pip = data.get("pip")
    if isinstance(pip, dict) and isinstance(pip.get("index-url"), str):
        return pip["index-url"]
    for entry in data.get("index") or []:
        if isinstance(entry, dict) and entry.get("default") is True and isinstance(entry.get("url"), str):
            return entry["url"]
    value = data.get("index-url")
    return value if isinstance(value, str) else None


def _read_toml(path: Path) -> dict[str, Any] | None:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _uv_project_table(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    """uv's project-level configuration: the first folder from ``folder`` up with a ``uv.toml`` or a
    ``pyproject.toml`` that has ``[tool.uv]`` (uv.toml first in one folder, as uv reads them)."""
    for here in (folder, *folder.parents):
        if (here / "uv.toml").is_file():
            data = _read_toml(here / "uv.toml")
            if data is not None:
                return here / "uv.toml", data
        if (here / "pyproject.toml").is_file():
            data = _read_toml(here / "pyproject.toml")
            tool = (data or {}).get("tool", {}).get("uv")
            if isinstance(tool, dict):
                return here / "pyproject.toml", tool
    return None


def _uv_configured(environ: Mapping[str, str], start: Path | None, home: Path) -> tuple[str, str] | None:
    if environ.get("UV_NO_CONFIG", "").lower() in ("1", "true", "yes", "on"):
        return None
    if environ.get("UV_CONFIG_FILE"):
        path = Path(environ["UV_CONFIG_FILE"])
        data = _read_toml(path)
        url = _uv_file_index(data) if data is not None else None
        return (url, str(path)) if url else None
    found: list[tuple[Path, dict[str, Any]]] = []
    project = _uv_project_table(start) if start is not None else None
    if project is not None:
        found.append(project)
    config_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    for path in (config_home / "uv" / "uv.toml", Path("/etc/uv/uv.toml")):
        data = _read_toml(path) if path.is_file() else None
        if data is not None:
            found.append((path, data))
    for path, data in found:
        url = _uv_file_index(data)
        if url:
            return url, str(path)
    return None


def _pip_configured(environ: Mapping[str, str], home: Path) -> tuple[str, str] | None:
    config_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [Path("/etc/pip.conf"), home / ".pip" / "pip.conf", config_home / "pip" / "pip.conf"]
    if environ.get("PIP_CONFIG_FILE") and environ["PIP_CONFIG_FILE"] != os.devnull:
        files.append(Path(environ["PIP_CONFIG_FILE"]))
    chosen = None
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            if not parser.read(path):
                continue
        except configparser.Error:
            continue
        url = parser.get("global", "index-url", fallback=None)
        if url:
            chosen = (url.strip(), str(path))  # a later file wins, as in pip
    return chosen


def configured(environ: Mapping[str, str] | None = None, start: Path | None = None, home: Path | None = None) -> Index:
    """The index to ask, in the module docstring's order: uv's project configuration is looked for from ``start``
    up (the repository), the user's files under ``home`` (default: ~)."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        value = environ.get(name, "").strip()
        if value:
            # uv reads UV_DEFAULT_INDEX as [name=]url (https://docs.astral.sh/uv/reference/environment/).
            return Index(value.split("=", 1)[1] if re.match(r"^[A-Za-z0-9._-]+=", value) else value, name)
    for found in (_uv_configured(environ, start, home), _pip_configured(environ, home)):
        if found is not None:
            return Index(found[0], found[1])
    return Index(PYPI)
