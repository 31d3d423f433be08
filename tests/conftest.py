import sys
from dataclasses import replace
from pathlib import Path

import pytest

from plugpull.targets import Target

AGENTS = Path(__file__).parent / "agents"


def agent_target(script: str, *args: str) -> Target:
    return Target(name="agent", argv=(sys.executable, str(AGENTS / script), *args))


@pytest.fixture
def fake_framework():
    return lambda body: agent_target("fake_framework.py", body)


@pytest.fixture
def misbehaving():
    return lambda how: agent_target("misbehaving.py", how)


@pytest.fixture
def approval_framework():
    return lambda how: agent_target("approval_framework.py", how)


@pytest.fixture
def session_app():
    return lambda how: replace(agent_target("session_app.py", how), scenario="lost-session-write")
