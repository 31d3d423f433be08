"""Real power-cut mounts for the tests; they skip, saying why, only where FUSE cannot mount."""

from pathlib import Path

import pytest

from plugpull.powercut.mount import FuseUnavailable, PowerCutMount


class Mounts:
    """Mounts over ``tmp/backing`` at ``tmp/mnt``; every one is stopped when the test ends."""

    def __init__(self, tmp: Path) -> None:
        self.backing = tmp / "backing"
        self.mnt = tmp / "mount point"  # a space: /proc/self/mountinfo escapes it
        self.backing.mkdir()
        self.mnt.mkdir()
        self.started: list[PowerCutMount] = []

    def mount(self) -> PowerCutMount:
        mount = PowerCutMount(self.backing, self.mnt)
        self.started.append(mount)
        try:
            return mount.start()
        except FuseUnavailable as error:
            pytest.skip(str(error))


@pytest.fixture
def mounts(tmp_path):
    made = Mounts(tmp_path)
    yield made
    for mount in made.started:
        mount.stop()
