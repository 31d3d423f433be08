"""A scripted offline model for the OpenAI Agents SDK checks: asks for every tool call until each has its output."""

import json

from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agents import Model, ModelResponse, set_tracing_disabled

set_tracing_disabled(True)


def field(item, name):
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


class Scripted(Model):
    def __init__(self, tools):
        self.tools = tools

    async def get_response(self, system_instructions, input, *args, **kwargs):
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        if not any(field(i, "type") == "function_call_output" for i in items):
            output = [
                ResponseFunctionToolCall(
                    type="function_call", call_id=f"call_{n}", name=name, arguments=json.dumps({}), status="completed"
                )
                for n, name in enumerate(self.tools)
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [
                ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=[text])
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError
