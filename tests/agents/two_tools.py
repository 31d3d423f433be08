"""A tiny fake framework whose one model turn asks for two tools, run at once or one after the other.

    python two_tools.py threads|sequential start|resume   (or python -m two_tools, tests/agents on the path)

Each tool calls the provider with a fixed key (so a re-run is the same effect): ``charge`` and
``email``. "threads" runs the two tools in two threads at once, as LangGraph's ToolNode does;
"sequential" runs charge, then email, in one thread. Resume runs both again; the keys keep each
at one effect. Every finished run reports {"tools": "done"}.
"""

import sys
import threading

from plugpull import record_effect, record_result


def main():
    how = sys.argv[1]  # then the phase: start and resume run both tools alike
    tools = [lambda: record_effect("charge", key="k-charge"), lambda: record_effect("email", key="k-email")]
    if how == "threads":
        threads = [threading.Thread(target=tool) for tool in tools]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        for tool in tools:
            tool()
    record_result({"tools": "done"})


# A main guard: tests run this as ``python -m two_tools`` from a fork server (tests/conftest.py, AgentForks),
# which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
