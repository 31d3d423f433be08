"""The committed bundles' ISSUE.md (findings/*/bundles/*/ISSUE.md) are what a maintainer of one framework pastes.

Each is at most 60 lines; names its framework and release in its title and none of its finding's other frameworks
(a finding may span five: the power-loss one); states Expected and Actual; attaches the script (witness.py) rather
than inlining it; and speaks a maintainer's words, not plugpull's (outside code). A timing bug's command repeats.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plugpull.report.harness import bundle
from plugpull.report.harness.finding import load_all

ROOT = Path(__file__).resolve().parents[2]
ISSUES = sorted((ROOT / "findings").glob("*/bundles/*/ISSUE.md"))
#: How a page names each framework besides its distribution name.
NAMES = {
    "agent-framework-core": ("Agent Framework", "agent-framework"),
    "crewai": ("CrewAI",),
    "dbos": ("DBOS",),
    "fastaiagent": ("FastAIAgent",),
    "google-adk": ("Google ADK", "ADK"),
    "langgraph": ("LangGraph",),
    "llama-index-workflows": ("LlamaIndex", "llama-index"),
    "openai-agents": ("OpenAI Agents",),
    "pydantic-ai-slim": ("Pydantic AI", "pydantic-ai", "PydanticAI"),
    "restate-sdk": ("Restate",),
}
#: plugpull's own words (a line, its point, kind and verdict, the harness, the witness) an issue does without.
JARGON = re.compile(r"\b(harness|provider saw|kinds?|points?|lines?|verdicts?|witness(?:es)?|plugpull run)\b", re.I)


def prose(text: str) -> str:
    """``text`` without code blocks and inline code (a command may say --point, a file is witness.py)."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def test_there_are_committed_bundles():
    assert len(ISSUES) >= 5


@pytest.mark.parametrize("issue", ISSUES, ids=lambda p: p.parent.name)
def test_a_committed_issue_is_short_about_one_framework_with_expected_and_actual_and_the_script_attached(issue):
    text = issue.read_text()
    lines = text.splitlines()
    assert len(lines) <= 60, f"{len(lines)} lines"
    dist = re.match(r"# (\S+) \S+", lines[0]).group(1)
    finding = load_all(ROOT)[issue.parts[-4]]
    frameworks = {r.doc.get("framework") for r in bundle.rows(finding)} | {c.framework for c in finding.claims}
    others = {f for f in frameworks if f and f != dist}
    assert others or frameworks - {None} == {dist}  # a one-framework finding has no other framework to leave out
    for other in sorted(others):
        for name in (other, *NAMES.get(other, ())):
            if name.lower() not in dist and not any(name in own for own in NAMES.get(dist, ())):
                assert not re.search(rf"\b{re.escape(name)}\b", text, re.I), f"names {name} ({other})"
    assert "\n**Expected:** " in text and "\n**Actual** (on " in text
    script = (issue.parent / bundle.WITNESS).read_text()
    assert "```python" not in text
    inlined = [line for line in script.splitlines() if len(line.strip()) > 30 and line in lines]
    assert not inlined, inlined[:3]
    assert not JARGON.findall(prose(text)), JARGON.findall(prose(text))


@pytest.mark.parametrize("issue", ISSUES, ids=lambda p: p.parent.name)
def test_a_committed_timing_issue_gives_the_command_with_repeat_and_the_rate_to_expect(issue):
    text = issue.read_text()
    script = bundle.script_facts((issue.parent / bundle.WITNESS).read_text())
    timing = "It fails in some runs only" in text
    if not timing:
        assert "--repeat" not in text
        return
    assert script.repeat
    n = re.search(r"python witness\.py .*--repeat (\d+)\n```", text).group(1)
    assert re.search(rf"the command runs it {n} times and prints how many failed: expect about \d+ of {n}", text)
    assert re.search(r"\d+ of \d+ runs, 95 % interval \d+ % to \d+ %", text)


def test_the_timing_bundles_are_the_racing_adk_ones():
    timing = [p.parent.name for p in ISSUES if "It fails in some runs only" in p.read_text()]
    assert sorted(timing) == ["adk_racing_approvers-google-adk-1.39.1", "adk_racing_approvers-google-adk-2.13.0"]


def test_a_simulated_power_cut_says_so_in_its_first_lines():
    [issue] = [p for p in ISSUES if p.parent.name.startswith("agent_framework_power_cut-")]
    head = "\n".join(issue.read_text().splitlines()[:4])
    assert "**Note:** The power cut is simulated, not real: the script logs every fsync" in head
