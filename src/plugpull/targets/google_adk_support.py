"""What the Google ADK apps of the built-in targets share: a scripted model and a resumable refund app.

An ``LlmAgent`` with one refund tool and a scripted offline model (a ``BaseLlm`` subclass that asks for the
refund until the conversation holds the tool's answer), in an ``App`` with
``ResumabilityConfig(is_resumable=True)``: ADK's way to resume an invocation that "failed midway" with
``run_async(invocation_id=...)``. A user's app could keep a module like this one beside it: nothing in it is
plugpull's but ``preimport``, which the targets' ``plugpull_prefork`` hooks call (optional).
"""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from plugpull.client import import_present

#: What ADK imports only once a run starts (its workflow engine, the LLM flows, the Gemini model class and the
#: auth libraries they pull in): 0.75 s of a phase's 0.87 s of CPU here (google-adk 2.x; python -X importtime).
#: The rest of what a forked phase of google-adk 2.13 imported after these: the runner's agent router and node
#: helpers, what ``LlmAgent`` imports when it runs (its flow, the workflow wrapper, the search tools it checks
#: for, the A2A package's lazy front), the auth preprocessor, and the pydantic module a JSON schema imports on use.
RUN_IMPORTS = (
    "google.adk.workflow._workflow",
    "google.adk.flows.llm_flows.tools._functions",
    "google.adk.flows.llm_flows.single_flow",
    "google.adk.flows.llm_flows.extensions._agent_transfer",
    "google.adk.flows.llm_flows.core._resume",
    "google.adk.models.google_llm",
    "google.adk.tools.agent_tool",
    "google.adk.agents._agent_router",
    "google.adk.workflow._node_runner_utils",
    "google.adk.workflow._llm_agent_wrapper",
    "google.adk.flows.llm_flows.auto_flow",
    "google.adk.tools.google_search_tool",
    "google.adk.tools.vertex_ai_search_tool",
    "google.adk.a2a.agent",
    "google.adk.auth.auth_preprocessor",
    "pydantic._internal._dataclasses",
)


#: The google.genai types a run builds (the conversation's Content and Parts, a function call and its response, the
#: tool's declaration, the request's config), which pydantic completes on their first use (``model_rebuild``, their
#: forward references resolved): in a forked phase of google-adk 2.13 that was ~0.06 of an approval start's ~0.135
#: CPU-s (0.079 with them completed in the server; six phases each way, alternated).
RUN_MODELS = (
    "AudioTranscriptionConfig",
    "Content",
    "FunctionCall",
    "FunctionDeclaration",
    "FunctionResponse",
    "GenerateContentConfig",
    "LiveConnectConfig",
    "Part",
    "Tool",
    "UserContent",
)


def preimport() -> None:
    """Import what a run imports lazily, and complete the types it builds, in plugpull's fork server, so that each
    forked phase does not.

    Only imports and pydantic's completion of classes (``RUN_MODELS``): these open nothing and start no thread
    (checked: one thread after). A module or type another release does not have is left out; the phase does what its
    release needs, as a cold one does.
    """
    import_present(*RUN_IMPORTS)
    for name in RUN_MODELS:
        model = getattr(types, name, None)
        if model is not None and getattr(model, "__pydantic_complete__", True) is False:
            model.model_rebuild()


APP_NAME = "refunds"
USER_ID = "customer-1"
SESSION_ID = "refund-A-1001"
REQUEST = "Please refund order A-1001."


class ScriptedLlm(BaseLlm):
    """An offline model that decides from the conversation, like a real LLM would.

    It asks for the refund tool until the request holds the tool's answer, then answers in
    text. Like Gemini it gives no function call id; ADK assigns one.
    """

    model: str = "plugpull-scripted"

    async def generate_content_async(self, llm_request: Any, stream: bool = False):
        answered = any(
            part.function_response is not None for content in llm_request.contents or [] for part in content.parts or []
        )
        if answered:
            part = types.Part(text="Refund for order A-1001 is done.")
        else:
            part = types.Part(
                function_call=types.FunctionCall(name="refund", args={"order_id": "A-1001", "cents": 1999})
            )
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def build_runner(
    refund: Any,
    sessions: BaseSessionService,
    *,
    model: BaseLlm | None = None,
    tools: list[Any] | None = None,
    plugins: list[Any] | None = None,
) -> Runner:
    """The resumable refund app with ``refund`` as its tool (a function or an ADK tool), on ``sessions``.

    ``model`` replaces the scripted model, ``tools`` the tool list (``[refund]``), ``plugins`` are the App's."""
    agent = LlmAgent(
        name="refund_agent",
        model=model or ScriptedLlm(),
        instruction="Refund the order the customer names.",
        tools=tools or [refund],
    )
    # plugins only when given: the App of every release the findings pin is built as it always was.
    extra = {"plugins": plugins} if plugins else {}
    app = App(name=APP_NAME, root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True), **extra)
    return Runner(app=app, session_service=sessions)


async def drain(runner: Runner, **kwargs: Any) -> str | None:
    """Run the session's invocation (``run_async(**kwargs)``) to its end: the last text the agent said."""
    final = None
    async for event in runner.run_async(user_id=USER_ID, session_id=SESSION_ID, **kwargs):
        if event.content and event.content.parts and event.content.parts[0].text:
            final = event.content.parts[0].text
    return final


def request() -> types.Content:
    """The customer's message that starts a run."""
    return types.Content(role="user", parts=[types.Part(text=REQUEST)])
