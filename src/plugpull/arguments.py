"""Argument parsing shared by ``plugpull`` and ``plugpull report``: bad input is one line and exit 2."""

from __future__ import annotations

import argparse

from plugpull.errors import UsageError

__all__ = ["ArgParser", "UsageError"]


class ArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        raise UsageError(message)
