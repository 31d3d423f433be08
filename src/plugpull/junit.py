"""Results as JUnit XML (``plugpull --junit FILE``): the test report format CI systems show natively.

GitHub (test-reporter actions), GitLab (``artifacts:reports:junit``) and Jenkins read the structure of
Jenkins' xUnit plugin junit-10.xsd
(https://github.com/jenkinsci/xunit-plugin/blob/master/src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd):
``<testsuites>`` of ``<testsuite>`` (properties, testcases), a testcase holding ``<failure>`` or
``<error>``. One testsuite per scenario; one testcase per result line, ``classname`` the scenario and
target, ``name`` the point. With ``--repeat N`` one testcase per line carries the verdict counts
(docs/DECISIONS.md, "CLI output, JUnit, progress, the pytest plugin"). Written with the standard library only.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import tempfile
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

from plugpull.rendering import format_text, shown_target
from plugpull.results import Result, Verdict, lines, redact

#: Characters XML 1.0 cannot carry (https://www.w3.org/TR/xml/#charsets): a target's stderr may hold
#: ANSI escapes or NUL bytes, which would make the whole file unreadable to a CI viewer.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    """``text`` safe for an XML document: secret-looking env values redacted, control characters shown as ``\\xNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", redact(text))


def seconds(value: float) -> str:
    # junit-10.xsd's SUREFIRE_TIME: plain decimal, no exponent.
    return f"{max(value, 0.0):.3f}"


def counts(runs: list[Result]) -> str:
    n = {v: sum(1 for r in runs if r.verdict is v) for v in Verdict}
    return ", ".join(f"{n[v]} {v.value}" for v in Verdict if n[v])


def testcase(runs: list[Result]) -> ET.Element:
    """One testcase for one line: a single run, or every repeat of it with the verdict counts."""
    first = runs[0]
    case = ET.Element(
        "testcase",
        {
            "classname": clean(f"{first.scenario} {shown_target(first)}"),
            "name": clean(first.point),
            "time": seconds(sum(r.seconds for r in runs)),
        },
    )
    fails = [r for r in runs if r.verdict is Verdict.FAIL]
    errors = [r for r in runs if r.verdict is Verdict.ERROR]
    if not fails and not errors:
        return case
    # A FAIL is evidence against the target; an ERROR is none either way, so a line with both is a failure.
    tag, shown = ("failure", fails[0]) if fails else ("error", errors[0])
    message = shown.message
    if len(runs) > 1:
        message = f"{counts(runs)} of {len(runs)} runs; first {shown.verdict.value}: {message}"
    # The body is what the text output prints for that run: the line, the call summary, the notes and the
    # target's stderr tail; with repeats, the first FAIL's and the first ERROR's.
    body = "\n\n".join(format_text([r]) for r in (fails[:1] + errors[:1]))
    element = ET.SubElement(case, tag, {"message": clean(message), "type": shown.verdict.value})
    element.text = clean(body)
    stderr = "\n".join(r.stderr for r in (fails[:1] + errors[:1]) if r.stderr.strip())
    if stderr:
        ET.SubElement(case, "system-err").text = clean(stderr)
    return case


def document(
    results: list[Result], properties: dict[str, str] | None = None, started: datetime | None = None
) -> ET.ElementTree:
    """The JUnit XML tree for ``results``: one testsuite per scenario, one testcase per line.

    ``started``: when the run began (the testsuites' ``timestamp``, UTC); default now.
    """
    stamp = (started or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites", {"name": "plugpull"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
    scenarios: dict[str, list[list[Result]]] = {}
    for runs in lines(results).values():
        scenarios.setdefault(runs[0].scenario, []).append(runs)
    for scenario, members in scenarios.items():
        cases = [testcase(runs) for runs in members]
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": scenario,
                "tests": str(len(cases)),
                "failures": str(sum(1 for c in cases if c.find("failure") is not None)),
                "errors": str(sum(1 for c in cases if c.find("error") is not None)),
                "skipped": "0",
                "time": seconds(sum(float(c.get("time", 0)) for c in cases)),
                "timestamp": stamp,
                "hostname": clean(socket.gethostname()),
            },
        )
        if properties:
            props = ET.SubElement(suite, "properties")
            for name, value in properties.items():
                ET.SubElement(props, "property", {"name": clean(name), "value": clean(value)})
        suite.extend(cases)
        for key in ("tests", "failures", "errors"):
            totals[key] += int(suite.get(key))
        totals["time"] += float(suite.get("time"))
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", str(totals["errors"]))
    root.set("time", seconds(totals["time"]))
    tree = ET.ElementTree(root)
    ET.indent(tree)
    return tree


def run_properties(results: list[Result], command: list[str] | None = None, repeat: int = 1) -> dict[str, str]:
    """What ran: plugpull's and Python's versions, the platform, each framework version a line read, the command."""
    from importlib import metadata

    try:
        own = metadata.version("plugpull")
    except metadata.PackageNotFoundError:
        own = "?"
    props = {"plugpull": own, "python": platform.python_version(), "platform": platform.platform()}
    for r in results:
        if r.framework and r.version:
            props.setdefault(f"framework {r.framework}", r.version)
    if command is not None:
        import shlex

        props["command"] = shlex.join(["plugpull", *command])
    props["repeat"] = str(repeat)
    return props


def write(path: str, tree: ET.ElementTree) -> None:
    """Write ``tree`` to ``path`` whole or not at all (a temporary file beside it, then renamed)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".plugpull-junit-", suffix=".xml")
    try:
        with os.fdopen(fd, "wb") as out:
            tree.write(out, encoding="utf-8", xml_declaration=True)
            out.write(b"\n")
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def check_writable(path: str) -> str | None:
    """Why ``path`` cannot take the JUnit file, or None: checked before anything runs, leaving nothing behind."""
    if os.path.isdir(path):
        return "is a directory"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        return f"its directory {directory!r} does not exist"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return "is not writable"
    try:
        tempfile.TemporaryFile(dir=directory).close()
    except OSError as exc:
        return f"its directory is not writable: {exc.strerror or exc}"
    return None
