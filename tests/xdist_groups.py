"""``--dist loadgroup`` by the xdist_group marks of the collected tests, told to the controller by the workers.

pytest-xdist 3.8 tells its controller a test's group by appending ``@group`` to the test's id in the worker; since
pytest 9.2 a node's id is no longer the field it changes, so every group is lost and loadgroup spreads the tests one
by one, as ``--dist load`` does (https://github.com/pytest-dev/pytest-xdist/issues/1386, open). Here each worker
writes the group of every test it collected to a file the controller named (the node's ``workerinput``), and the
controller's scheduler reads the scope of a test from there (``pytest_xdist_make_scheduler``); a test the file does
not name keeps xdist's own rule, so a release that fixes the issue changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

#: The workerinput key naming the file a worker writes its tests' groups to.
KEY = "plugpull_xdist_groups"
FOLDER = pytest.StashKey[Path]()


def group_of(item: pytest.Item) -> str | None:
    """The item's group as xdist names it: its xdist_group names, sorted and joined (xdist/remote.py)."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) or None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Controller: name the file this worker writes its groups to, in a folder of this session's."""
    config = node.config
    if FOLDER not in config.stash:
        config.stash[FOLDER] = Path(tempfile.mkdtemp(prefix="plugpull-xdist-"))
    node.workerinput[KEY] = str(config.stash[FOLDER] / f"{node.gateway.id}.json")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker: after tests/conftest.py gave every test its group, write them where the controller reads them."""
    path = getattr(config, "workerinput", {}).get(KEY)
    if path:
        groups = {item.nodeid: group for item in items if (group := group_of(item))}
        Path(path + ".part").write_text(json.dumps(groups))
        os.replace(path + ".part", path)  # whole or absent: the controller reads it once every worker collected


def pytest_unconfigure(config: pytest.Config) -> None:
    if FOLDER in config.stash:
        shutil.rmtree(config.stash[FOLDER], ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class GroupScheduling(LoadGroupScheduling):
        """xdist's loadgroup (largest scope first, a scope on one worker), its scopes read from the workers' files."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first called once every worker has collected (LoadScopeScheduling.schedule)
                self.groups = {}
                for written in sorted(config.stash[FOLDER].glob("*.json")) if FOLDER in config.stash else ():
                    self.groups.update(json.loads(written.read_text()))
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return GroupScheduling(config, log)
