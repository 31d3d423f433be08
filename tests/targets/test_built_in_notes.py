"""Each built-in target's notes attach where their evidence says so, and stay away from every other FAIL.

Hand-built evidence in the shape ``plugpull --json`` writes (read off real runs of each target):
a crash, a hang, a lost effect instead of a duplicate, and a PASS must not carry a note written
for a duplicate.
"""

import pytest

from plugpull.notes import matched
from plugpull.results import Result, Verdict
from plugpull.targets import BUILT_INS


def notes_on(name: str, verdict: str, point: str, evidence: dict, stderr: str = "", variant: int = 0) -> list[str]:
    target = BUILT_INS[name].variants[variant]
    line = Result(Verdict(verdict), target.scenario, point, "t", "measured", evidence=evidence, stderr=stderr)
    return [note["text"] for note in matched(target.notes, line)]


def call(phase: str, name: str, recorded: bool) -> dict:
    return {"phase": phase, "name": name, "key": None, "recorded": recorded}


def outcome(returncode=0, timed_out=False) -> dict:
    return {"argv": [], "returncode": returncode, "timed_out": timed_out, "spawn_error": None, "seconds": 1.0}


# cancel-mid-stream, LangGraph: langgraph#5672 only when streamed text the user saw is not in the saved thread.


def cancelled(texts: list[str], saved_answer: str | None = None) -> dict:
    saved = [
        {"role": "user", "content": "Please refund order A-1001."},
        {"role": "assistant", "content": "I will refund.", "tool_calls": [{"id": "c1", "name": "refund"}]},
        {"role": "tool", "content": "refunded", "tool_call_id": "c1"},
    ]
    if saved_answer:
        saved.append({"role": "assistant", "content": saved_answer})
    return {"cancel": {"seen": {"text": texts, "tool_calls": ["c1"], "tool_results": ["c1"]}}, "conversation": saved}


def test_langgraph_stream_cites_5672_when_the_streamed_answer_is_not_in_the_thread():
    (text,) = notes_on("langgraph-stream", "FAIL", "model-stream", cancelled(["I will ", "Order "]))
    assert text.startswith("langgraph#5672")


@pytest.mark.parametrize(
    "ev",
    [
        cancelled(["I will ", "Order "], saved_answer="Order A-1001 is refunded."),  # the answer was saved
        {
            "cancel": {"seen": {"text": ["I will "], "tool_results": ["c9"]}},
            "conversation": cancelled([])["conversation"],
        },
        {"cancel": None, "conversation": None},  # the next turn did not report the thread
    ],
    ids=["kept", "only-a-tool-result-lost", "unknown"],
)
def test_langgraph_stream_says_nothing_of_5672_when_the_text_is_kept_or_unknown(ev):
    assert notes_on("langgraph-stream", "FAIL", "model-stream", ev) == []


# kill-mid-tool, LangGraph without a key: "resume refunded again".


def refunds(counts: int, calls: list[dict], resume: dict | None = None) -> dict:
    return {"point": "after-effect", "resume": resume or outcome(), "counts": {"refund": counts}, "calls": calls}


@pytest.mark.parametrize("variant", [0, 1])
def test_langgraph_says_resume_refunded_again_when_resume_recorded_the_second_refund(variant):
    ev = refunds(2, [call("start", "refund", True), call("resume", "refund", True)])
    (text,) = notes_on("langgraph", "FAIL", "after-effect", ev, variant=variant)
    assert text.startswith("resume refunded again")


@pytest.mark.parametrize(
    "verdict, ev",
    [
        # resume crashed after the kill, having refunded nothing: 1 refund (docs/stability.md saw it with async)
        ("FAIL", refunds(1, [call("start", "refund", True)], outcome(returncode=1))),
        ("FAIL", refunds(1, [call("start", "refund", True)], outcome(returncode=-9, timed_out=True))),
        ("FAIL", refunds(0, [call("start", "refund", False)], outcome(returncode=1))),  # lost, not duplicated
        ("FAIL", refunds(2, [call("start", "refund", True), call("start", "refund", True)])),  # not resume's doing
        ("PASS", refunds(1, [call("start", "refund", True), call("resume", "refund", False)])),
        ("ERROR", refunds(2, [call("start", "refund", True), call("resume", "refund", True)])),
    ],
)
def test_langgraph_says_nothing_of_refunding_again_otherwise(verdict, ev):
    assert notes_on("langgraph", verdict, "after-effect", ev) == []


@pytest.mark.parametrize("name", ["langgraph-functional", "dbos"])
def test_functional_langgraph_and_dbos_say_the_tool_ran_again_only_when_resume_recorded_the_second_refund(name):
    again = refunds(2, [call("start", "refund", True), call("resume", "refund", True)])
    crashed = refunds(1, [call("start", "refund", True)], outcome(returncode=1))
    assert len(notes_on(name, "FAIL", "after-effect", again)) == 1
    assert notes_on(name, "FAIL", "after-effect", crashed) == []
    assert notes_on(name, "PASS", "after-effect", refunds(1, [call("start", "refund", True)])) == []


@pytest.mark.parametrize("name", ["google-adk", "pydantic-ai"])
@pytest.mark.parametrize("variant", [0, 1])
def test_adk_and_pydantic_ai_quote_their_docs_only_when_resume_recorded_the_second_refund(name, variant):
    again = refunds(2, [call("start", "refund", True), call("resume", "refund", True)])
    crashed = refunds(1, [call("start", "refund", True)], outcome(returncode=1))
    (text,) = notes_on(name, "FAIL", "after-effect", again, variant=variant)
    assert ("at-least-once" if name == "google-adk" else "not automatically wrapped by DBOS") in text
    assert notes_on(name, "FAIL", "after-effect", crashed, variant=variant) == []
    assert notes_on(name, "FAIL", "after-effect", refunds(0, [call("start", "refund", False)]), variant=variant) == []


# kill-mid-tool, DBOS under another application_version: resume finds the workflow still PENDING.

NOT_RECOVERED = (
    "dbos_refund: resume: workflow refund-A-1001 is still PENDING after 30s: not recovered "
    "(recorded under version refunds-1; this process runs refunds-2)\n"
)


def pending(resumed: list, resume: dict | None = None) -> dict:
    return {**refunds(1, [call("start", "refund", True)], resume), "resumed": resumed}


def test_dbos_quotes_its_versioning_docs_when_resume_found_the_workflow_not_recovered():
    (text,) = notes_on("dbos", "FAIL", "after-effect", pending([]), stderr=NOT_RECOVERED, variant=2)
    assert "does not attempt to recover workflows tagged with a different application version" in text


@pytest.mark.parametrize(
    "verdict, ev, stderr",
    [
        ("FAIL", pending([]), "dbos_refund: resume: workflow refund-A-1001 is PENDING after launch\n"),  # no such line
        ("FAIL", pending([], outcome(returncode=1)), NOT_RECOVERED),  # resume crashed
        ("FAIL", pending([], outcome(returncode=-9, timed_out=True)), NOT_RECOVERED),  # resume hung
        ("FAIL", pending([{"answer": "other"}]), NOT_RECOVERED),  # it reported a result: it finished
        ("ERROR", pending([]), NOT_RECOVERED),
    ],
)
def test_dbos_says_nothing_of_versions_otherwise(verdict, ev, stderr):
    assert notes_on("dbos", verdict, "after-effect", ev, stderr=stderr, variant=2) == []


# lost-session-write, OpenAI Agents: #4775 and the docs' promise.


def staged(point: str, stored: int, resume: dict | None = None) -> dict:
    return {"write": 4, "point": point, "resume": resume or outcome(), "staged_stored": stored, "counts": {}}


def test_openai_agents_cites_4775_and_the_docs_when_a_lost_ack_stores_the_staged_input_twice():
    texts = notes_on("openai-agents", "FAIL", "ack-lost", staged("ack-lost", 2))
    assert [t.split(":")[0] for t in texts] == ["openai/openai-agents-python#4775", "the SDK docs promise"]
    assert "one durable InputItem occurrence" in texts[1]
    assert len(notes_on("openai-agents", "FAIL", "ack-lost", staged("ack-lost", 3))) == 2


@pytest.mark.parametrize(
    "verdict, ev",
    [
        ("FAIL", staged("ack-lost", 0)),  # lost instead of duplicated
        ("FAIL", staged("write-lost", 2)),  # a duplicate, but not after a lost ack
        ("FAIL", staged("ack-lost", 1, outcome(returncode=1))),  # resume crashed
        ("FAIL", staged("ack-lost", 1, outcome(returncode=-9, timed_out=True))),  # resume hung
        ("PASS", staged("ack-lost", 1)),
        ("ERROR", staged("ack-lost", 2)),
    ],
)
def test_openai_agents_cites_neither_otherwise(verdict, ev):
    assert notes_on("openai-agents", verdict, ev["point"], ev) == []


# kill-mid-tool, Agent Framework: #8292 only for A charged twice and B never.


def charges(a: int, b: int, resume: dict | None = None) -> dict:
    return {"point": "before-effect", "resume": resume or outcome(), "counts": {"charge_card:A": a, "charge_card:B": b}}


def test_agent_framework_cites_8292_when_a_was_charged_twice_and_b_never():
    (text,) = notes_on("agent-framework", "FAIL", "before-effect", charges(2, 0))
    assert "microsoft/agent-framework#8292" in text


@pytest.mark.parametrize(
    "ev",
    [
        charges(1, 1, outcome(returncode=1)),  # a crash with the right counts
        charges(1, 1, outcome(returncode=-9, timed_out=True)),  # a hang
        charges(1, 0),  # B lost, A not duplicated
        charges(0, 0, outcome(returncode=1)),  # both lost
        charges(2, 1),  # A duplicated, B charged: not the swap
        charges(3, 0),
        {"point": "before-effect", "resume": None, "counts": {}},  # resume never ran
    ],
)
def test_agent_framework_does_not_cite_8292_for_any_other_failure(ev):
    assert notes_on("agent-framework", "FAIL", "before-effect", ev) == []


def receipts(a_customer: str, b_customer: str) -> dict:
    """Killed at B's charge: each card charged once, and resume's result (the checkout's outcome())."""
    orders = [{"order_id": "A", "customer": a_customer}, {"order_id": "B", "customer": b_customer}]
    return {**charges(1, 1), "point": "after-effect", "resumed": [{"orders": orders}]}


def test_agent_framework_cites_8292_when_each_order_got_the_other_customers_payment():
    (text,) = notes_on("agent-framework", "FAIL", "after-effect", receipts("B", "A"))
    assert text.startswith("each order got the other order's saved payment") and "#8292" in text


@pytest.mark.parametrize("a, b", [("A", "B"), ("A", "A"), ("B", "B")])
def test_agent_framework_names_no_swapped_payment_unless_both_orders_have_the_others(a, b):
    assert notes_on("agent-framework", "FAIL", "after-effect", receipts(a, b)) == []
    assert notes_on("agent-framework", "FAIL", "after-effect", receipts("B", "A"), variant=1) == []


def test_agent_framework_cites_8292_neither_for_the_control_nor_a_pass():
    assert notes_on("agent-framework", "FAIL", "before-effect", charges(2, 0), variant=1) == []
    assert notes_on("agent-framework", "PASS", "before-effect", charges(1, 1)) == []


# resume-after-approval.


def approval(
    point: str, ran: list[int], refund: int, recover_exit: int | None = None, recover_ran: int = 0, hung=False
) -> dict:
    ev = {
        "point": point,
        "approvals": [{"outcome": outcome(0), "effect_calls": n} for n in ran],
        "counts": {"refund": refund},
        "recover": None,
    }
    if recover_exit is not None or hung:
        ev["recover"] = {"outcome": outcome(recover_exit, timed_out=hung), "effect_calls": recover_ran}
    return ev


INTERRUPTS = "LangGraph does not claim a pending interrupt; every Command(resume=...) re-runs the node"
DOUBLE_TEXTING = (
    "runs racing on one thread are not handled by the open-source framework (double texting is an Agent Server feature)"
)
LANGGRAPH_6663 = "langchain-ai/langgraph#6663: a second resume of the same interrupted checkpoint runs the node again"
NODE_AGAIN = "the node that called interrupt() runs again from its start on resume"


@pytest.mark.parametrize("variant", [0, 1])
def test_langgraph_approval_says_every_resume_reruns_the_node_when_two_approvers_ran_the_tool(variant):
    ev = approval("racing-resumers", [1, 1, 1, 1, 0], 4)
    assert notes_on("langgraph-approval", "FAIL", "racing-resumers", ev, variant=variant) == [
        INTERRUPTS,
        DOUBLE_TEXTING,
        LANGGRAPH_6663,
    ]
    ev = approval("double-resume", [1, 1], 2)
    assert notes_on("langgraph-approval", "FAIL", "double-resume", ev) == [INTERRUPTS, DOUBLE_TEXTING, LANGGRAPH_6663]


def test_langgraph_approval_says_the_node_runs_again_when_recover_refunded_a_second_time():
    ev = approval("killed-after-effect", [1], 2, recover_exit=0, recover_ran=1)
    assert notes_on("langgraph-approval", "FAIL", "killed-after-effect", ev) == [NODE_AGAIN]


@pytest.mark.parametrize(
    "verdict, ev",
    [
        ("FAIL", approval("racing-resumers", [1, 0, 0, 0, 0], 1)),  # one ran, a loser crashed
        ("FAIL", approval("racing-resumers", [0, 0, 0, 0, 0], 0)),  # nobody ran it: lost
        ("PASS", approval("double-resume", [1, 0], 1)),  # the second approval was a no-op
        ("FAIL", approval("killed-after-effect", [1], 1, recover_exit=1, recover_ran=0)),  # recover crashed
        ("FAIL", approval("killed-after-effect", [1], 1, hung=True)),  # recover hung
        ("FAIL", approval("killed-before-effect", [1], 0, recover_exit=1)),  # lost
        ("PASS", approval("killed-before-effect", [1], 1, recover_exit=0, recover_ran=1)),
        ("ERROR", approval("racing-resumers", [1, 1, 0, 0, 0], 2)),  # e.g. the race was not proven
    ],
)
def test_langgraph_approval_says_neither_otherwise(verdict, ev):
    assert notes_on("langgraph-approval", verdict, ev["point"], ev) == []


NO_CLAIM = "a saved RunState carries no claim: every restore of it runs the approved tool"


@pytest.mark.parametrize(
    "ev",
    [
        approval("double-resume", [1, 1], 2),
        approval("racing-resumers", [1, 1, 1, 1, 1], 5),
        approval("killed-after-effect", [1], 2, recover_exit=0, recover_ran=1),
    ],
)
def test_openai_agents_approval_says_the_state_carries_no_claim_when_two_restores_refunded(ev):
    assert notes_on("openai-agents-approval", "FAIL", ev["point"], ev) == [NO_CLAIM]


@pytest.mark.parametrize(
    "verdict, ev",
    [
        ("FAIL", approval("double-resume", [1, 0], 1)),  # the second approval crashed without running the tool
        ("FAIL", approval("killed-after-effect", [1], 1, recover_exit=1, recover_ran=0)),  # recover crashed
        ("FAIL", approval("killed-after-effect", [1], 1, hung=True)),  # recover hung
        ("FAIL", approval("killed-before-effect", [1], 0, recover_exit=0, recover_ran=1)),  # ran twice, lost
        ("PASS", approval("killed-before-effect", [1], 1, recover_exit=0, recover_ran=1)),
    ],
)
def test_openai_agents_approval_says_nothing_of_claims_otherwise(verdict, ev):
    assert notes_on("openai-agents-approval", verdict, ev["point"], ev) == []


@pytest.mark.parametrize("name, words", [("google-adk-approval", "at-least-once"), ("pydantic-ai-approval", "DBOS")])
def test_adk_and_pydantic_ai_approvals_quote_their_docs_when_recover_ran_the_approved_tool_again(name, words):
    again = approval("killed-after-effect", [1], 2, recover_exit=0, recover_ran=1)
    (text,) = notes_on(name, "FAIL", "killed-after-effect", again)
    assert words in text
    for verdict, ev in [
        ("FAIL", approval("killed-after-effect", [1], 1, recover_exit=1, recover_ran=0)),  # recover crashed
        ("FAIL", approval("racing-resumers", [1, 0, 0, 0, 0], 1)),  # losers crashed
        ("FAIL", approval("double-resume", [1, 1], 2)),  # two approvals, not recover
        ("PASS", approval("killed-before-effect", [1], 1, recover_exit=0, recover_ran=1)),
    ]:
        assert notes_on(name, verdict, ev["point"], ev) == []


STUCK = "fastaiagent_approval: ChainCheckpointError without Resume; AlreadyResumed with Resume(approved=True)\n"


@pytest.mark.parametrize("point, refund", [("killed-before-effect", 0), ("killed-after-effect", 1)])
def test_fastaiagent_explains_the_stuck_run_when_recover_was_refused_both_ways(point, refund):
    ev = approval(point, [1], refund, recover_exit=4)
    (text,) = notes_on("fastaiagent", "FAIL", point, ev, stderr="...raised AlreadyResumed: ...\n" + STUCK)
    assert text.startswith("the approval's claim is taken before the tool runs")


@pytest.mark.parametrize(
    "ev, stderr",
    [
        # resume(id) itself raised AlreadyResumed: the note's "says 'pass resume_value'" would be false
        (approval("killed-after-effect", [1], 1, recover_exit=4), "fastaiagent_approval: AlreadyResumed: ...\n"),
        (approval("killed-after-effect", [1], 1, recover_exit=1), "Traceback ...\nsqlite3.OperationalError\n"),
        (approval("killed-after-effect", [1], 1, hung=True), STUCK),  # a hang, whatever it printed before
        (approval("racing-resumers", [1, 0, 0, 0, 0], 1), "sqlite3.OperationalError: database is locked\n"),
    ],
)
def test_fastaiagent_says_nothing_of_the_claim_for_another_failure(ev, stderr):
    assert notes_on("fastaiagent", "FAIL", ev["point"], ev, stderr=stderr) == []


def test_every_built_in_note_has_words_a_condition_and_a_case_above_where_it_attaches():
    attaching = [
        notes_on(
            "langgraph",
            "FAIL",
            "after-effect",
            refunds(2, [call("start", "refund", True), call("resume", "refund", True)]),
        ),
        notes_on("openai-agents", "FAIL", "ack-lost", staged("ack-lost", 2)),
        notes_on("agent-framework", "FAIL", "before-effect", charges(2, 0)),
        notes_on("agent-framework", "FAIL", "after-effect", receipts("B", "A")),
        notes_on("langgraph-approval", "FAIL", "racing-resumers", approval("racing-resumers", [1, 1, 0, 0, 0], 2)),
        notes_on(
            "langgraph-approval",
            "FAIL",
            "killed-after-effect",
            approval("killed-after-effect", [1], 2, recover_exit=0, recover_ran=1),
        ),
        notes_on("openai-agents-approval", "FAIL", "double-resume", approval("double-resume", [1, 1], 2)),
        notes_on(
            "fastaiagent", "FAIL", "killed-after-effect", approval("killed-after-effect", [1], 1, 4), stderr=STUCK
        ),
        notes_on(
            "dbos", "FAIL", "after-effect", refunds(2, [call("start", "refund", True), call("resume", "refund", True)])
        ),
        notes_on("dbos", "FAIL", "after-effect", pending([]), stderr=NOT_RECOVERED, variant=2),
        *(
            notes_on(
                name,
                "FAIL",
                "after-effect",
                refunds(2, [call("start", "refund", True), call("resume", "refund", True)]),
            )
            for name in (
                "google-adk",
                "pydantic-ai",
                "restate",
                "llama-index",
                "temporal",
                "pydantic-ai-temporal",
                "openai-agents-temporal",
            )
        ),
        *(
            notes_on(
                name,
                "FAIL",
                "killed-after-effect",
                approval("killed-after-effect", [1], 2, recover_exit=0, recover_ran=1),
            )
            for name in ("google-adk-approval", "pydantic-ai-approval")
        ),
    ]
    declared = {note.text: note for b in BUILT_INS.values() for t in b.variants for note in t.notes}
    attaching.append(notes_on("langgraph-stream", "FAIL", "model-stream", cancelled(["I will ", "Order "])))
    assert declared and all(note.condition and note.text for note in declared.values())
    assert set(declared) == {text for texts in attaching for text in texts}
