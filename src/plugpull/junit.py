"""Results as JUnit XML (``plugpull --junit FILE``): the test report format CI systems show natively.

GitHub (test-reporter actions), GitLab (``artifacts:reports:junit``) and Jenkins read the structure of
Jenkins' xUnit plugin junit-10.xsd
(https://github.com/jenkinsci/xunit-plugin/blob/master/src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd):
``<testsuites>`` of ``<testsuite>`` (properties, testcases), a testcase holding ``<failure>`` or
``<error>``. One testsuite per scenario; one testcase per result line. CI viewers split ``classname`` at
its dots into packages and classes, and compare testcases across builds by (classname, name), so
``classname`` is ``plugpull.<scenario>.<target>`` with dots only between those parts (the target's
``--target`` name, or the agent's script name: no path, no version) and ``name`` is everything else that
makes the line what it is: the point with its held call, the target's options, the agent's arguments,
``--sibling``; two lines that would still share both get ``#2``, ``#3``. With ``--repeat N``
one testcase per line carries the verdict counts (docs/DECISIONS.md, "CLI output, JUnit, progress, the
pytest plugin"). Written with the standard library only.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import socket
import tempfile
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

from plugpull.hints import held_point
from plugpull.rendering import format_text, shown_point
from plugpull.results import Result, Verdict, line_of, redact

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


#: A word of a class name: anything but a dot (the package separator) or a space.
_NOT_NAME = re.compile(r"[.\s]+")


def agent_name(command: str) -> tuple[str, list[str]]:
    """An --agent command's name for a class (its script's or module's stem) and the words after it.

    ``python tests/agents/fake_framework.py no-key`` -> ("fake_framework", ["no-key"]); ``python -m my.agent x``
    -> ("my_agent", ["x"]); a command without a script file -> its program's name.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return "agent", []
    for i, word in enumerate(words[1:], start=1):
        if words[i - 1] == "-m":
            return word, words[i + 1 :]
        if not word.startswith("-") and ("/" in word or os.path.splitext(word)[1]):
            return os.path.splitext(os.path.basename(word))[0], words[i + 1 :]
    return os.path.basename(words[0]), words[1:]


def class_name(result: Result) -> str:
    """``plugpull.<scenario>.<target>``: the built-in's --target name or the agent's script, dots only between."""
    if result.target_name and result.target_name != "agent":
        target = result.target_name
    elif result.target_name == "agent" or not result.framework:
        # An --agent command; resume-after-upgrade's label is "CMD_A -> CMD_B": named by the first.
        target = agent_name(result.target.split(" -> ")[0])[0]
    else:  # a record from before target_name: the framework it ran
        target = result.framework
    return ".".join(["plugpull", *(_NOT_NAME.sub("_", part).strip("_") or "_" for part in (result.scenario, target))])


def case_name(result: Result) -> str:
    """What makes the line what it is besides its class: the point with the held call, the options, the agent's
    arguments, --sibling. A boundary line is named by its boundary (``after model-call 2``), not its place in
    the list (``7/12``), which moves when a release adds a step; a random kill by its number, not where it
    landed, which differs per repeat."""
    evidence = result.evidence or {}
    point = result.point if ("landed" in evidence or "boundary" in evidence) else shown_point(result)
    words = [point]
    words += [f"{k}={v}" for k, v in result.options.items()]
    if result.target_name == "agent" or (not result.target_name and not result.framework):
        words += agent_name(result.target.split(" -> ")[0])[1]
    if evidence.get("sibling_spec"):
        words.append(f"sibling={evidence['sibling_spec']}")
    return " ".join(words)


def same_case(result: Result) -> tuple:
    """Runs that are one testcase: the same line (scenario, point, target) holding the same call."""
    evidence = result.evidence or {}
    return (
        *line_of(result),
        held_point(result),
        evidence.get("hold"),
        evidence.get("sibling_spec"),
        tuple(evidence.get("save_specs") or ()),
    )


def cases(results: list[Result]) -> list[tuple[str, str, list[Result]]]:
    """(classname, name, runs) per testcase, in first-seen order; names made unique within their class."""
    grouped: dict[tuple, list[Result]] = {}
    for result in results:
        grouped.setdefault(same_case(result), []).append(result)
    named, seen = [], {}
    for runs in grouped.values():
        classname, name = class_name(runs[0]), case_name(runs[0])
        seen[(classname, name)] = n = seen.get((classname, name), 0) + 1
        named.append((classname, name if n == 1 else f"{name} #{n}", runs))
    return named


def testcase(runs: list[Result], classname: str | None = None, name: str | None = None) -> ET.Element:
    """One testcase for one line: a single run, or every repeat of it with the verdict counts."""
    first = runs[0]
    case = ET.Element(
        "testcase",
        {
            "classname": clean(classname or class_name(first)),
            "name": clean(name or case_name(first)),
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
    scenarios: dict[str, list[ET.Element]] = {}
    for classname, name, runs in cases(results):
        scenarios.setdefault(runs[0].scenario, []).append(testcase(runs, classname, name))
    for scenario, members in scenarios.items():
        cases_of = members
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": scenario,
                "tests": str(len(cases_of)),
                "failures": str(sum(1 for c in cases_of if c.find("failure") is not None)),
                "errors": str(sum(1 for c in cases_of if c.find("error") is not None)),
                "skipped": "0",
                "time": seconds(sum(float(c.get("time", 0)) for c in cases_of)),
                "timestamp": stamp,
                "hostname": clean(socket.gethostname()),
            },
        )
        if properties:
            props = ET.SubElement(suite, "properties")
            for name, value in properties.items():
                ET.SubElement(props, "property", {"name": clean(name), "value": clean(value)})
        suite.extend(cases_of)
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
