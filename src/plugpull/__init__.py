"""plugpull: break an agent run on purpose and check the framework's recovery.

Only :func:`record_effect` is imported eagerly: it runs inside the agent on every start
and resume and must pull in nothing but the standard library. The harness API is
loaded on first use.
"""

from plugpull.client import ChannelClosed, NotInRun, PlugpullError, record_effect

__all__ = ["record_effect", "PlugpullError", "NotInRun", "ChannelClosed"]
