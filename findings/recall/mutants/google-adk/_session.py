"""Google ADK's SqliteSessionService on a file, and events to append to it (for the checks)."""

import time

from google.adk.events import Event
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types


def service() -> SqliteSessionService:
    return SqliteSessionService("sessions.sqlite")


def event(text: str) -> Event:
    time.sleep(0.01)  # distinct timestamps: events reload ordered by time
    return Event(author="user", invocation_id="i1", content=types.Content(role="user", parts=[types.Part(text=text)]))
