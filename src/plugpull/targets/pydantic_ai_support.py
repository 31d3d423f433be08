"""What the Pydantic AI apps of the built-in targets share: a scripted model, and an agent made durable with DBOS.

``DBOSAgent`` (pydantic_ai.durable_exec.dbos) runs the agent as a DBOS workflow; DBOS keeps its system
database in SQLite in $PLUGPULL_WORKDIR and recovers this executor's pending workflows of the same
application version when it launches. A user's app could keep a module like this one beside it: nothing
in it is plugpull's but ``plugpull_prefork``, the targets' optional hook for plugpull's fork server.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dbos import DBOS
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from plugpull.client import WORKDIR_ENV, import_present

#: What a DBOSAgent run imports only once it runs: ``DBOSAgent`` itself (``durable`` imports it lazily), the SQLite
#: dialect and driver SQLAlchemy loads for DBOS's system database URL, DBOS's SQLite system database, the asyncio
#: backend anyio loads on its first call, and what Pydantic AI imports on first use (pydantic.networks,
#: pydantic_ai.direct): 35 modules, measured in forked phases of pydantic-ai-slim 2.68 and dbos 3.4.
RUN_IMPORTS = (
    "pydantic_ai.durable_exec.dbos",
    "sqlalchemy.dialects.sqlite",
    "sqlite3",
    "dbos._sys_db_sqlite",
    "anyio._backends._asyncio",
    "pydantic.networks",
    "pydantic_ai.direct",
)

REQUEST = "Please refund order A-1001."


def scripted_model(log: Callable[[str], None], two_tools: bool = False) -> FunctionModel:
    """An offline model that asks for the refund until the conversation holds the tool's answer.

    It makes a new tool call id each time, as an LLM would; a fresh process makes the same choice from
    the same conversation. ``two_tools``: its first turn asks for ``send_email`` too, two calls in one response.
    """

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = {
            part.tool_name for message in messages for part in message.parts if isinstance(part, ToolReturnPart)
        }
        if "refund" in returned:
            return ModelResponse(parts=[TextPart("Refund for order A-1001 is done.")])
        call = ToolCallPart(
            "refund", {"order_id": "A-1001", "cents": 1999}, tool_call_id=f"call_{uuid.uuid4().hex[:16]}"
        )
        log(f"model asks for {call.tool_call_id}")
        if two_tools and "send_email" not in returned:  # as a real model would, only what is not answered yet
            email = ToolCallPart("send_email", {"order_id": "A-1001"}, tool_call_id=f"call_{uuid.uuid4().hex[:16]}")
            return ModelResponse(parts=[email, call])
        return ModelResponse(parts=[call])

    return FunctionModel(respond)


def workdir() -> Path:
    """The run's $PLUGPULL_WORKDIR, where DBOS keeps its system database (and the app its files)."""
    return Path(os.environ.get(WORKDIR_ENV, ".")).resolve()


@contextmanager
def durable(agent: Agent, *, name: str, application_version: str) -> Iterator[Any]:
    """``agent`` as a ``DBOSAgent``, DBOS launched (recovering what it recovers) until the block ends."""
    DBOS(
        config={
            "name": name,
            "system_database_url": f"sqlite:///{workdir() / 'dbos.sqlite'}",
            "application_version": application_version,
        }
    )
    with warnings.catch_warnings():
        # Newer releases deprecate DBOSAgent in favour of the DBOSDurability capability; it still works.
        warnings.simplefilter("ignore")
        from pydantic_ai.durable_exec.dbos import DBOSAgent

        wrapped = DBOSAgent(agent)
    try:
        DBOS.launch()
        yield wrapped
    finally:
        DBOS.destroy()


def workflow_output(workflow_id: str, log: Callable[[str], None], phase: str) -> Any:
    """The output of workflow ``workflow_id``, once DBOS finished it (a launch recovers it if it was pending)."""
    handle = DBOS.retrieve_workflow(workflow_id)
    log(f"{phase}: workflow {workflow_id} is {handle.get_status().status} after launch")
    return handle.get_result().output


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import what a run imports only once it runs (``RUN_IMPORTS``) in plugpull's fork server, once, instead of in
    every forked phase.

    Only imports: none of them opens a file or connection or starts a thread (checked: one thread after). Importing
    ``pydantic_ai.durable_exec.dbos`` registers the ``DBOSAgent`` class in DBOS's registry before ``DBOS(config=...)``
    rather than after; DBOS picks up what was registered before it was made (dbos/_dbos.py, "Lifecycles"), as it
    does for a user's decorated classes. A module a release does not have is skipped. Returns None: the forked phase
    runs its module as ``__main__`` (docs/DECISIONS.md, "Throughput").
    """
    import_present(*RUN_IMPORTS)
