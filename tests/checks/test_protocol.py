"""Protocol mistakes on hand-built evidence: a usage message is the agent's, not the framework's."""

from plugpull.checks.protocol import usage_refused
from plugpull.evidence import Outcome
from plugpull.results import Verdict

ARGPARSE = "usage: agent.py [-h] {start}\nagent.py: error: argument phase: invalid choice: 'resume'\n"


def test_exit_2_with_argparses_usage_is_an_error_asking_about_the_subcommand():
    judgement = usage_refused(Outcome(argv=["agent.py", "resume"], returncode=2, stderr=ARGPARSE), "resume")
    assert judgement.verdict is Verdict.ERROR and judgement.show == "resume"
    assert judgement.message.startswith(
        "resume exited 2 with a usage message: does COMMAND accept the `resume` argument?"
    )


def test_exit_2_without_a_usage_message_is_left_to_the_scenario():
    assert (
        usage_refused(Outcome(argv=["a"], returncode=2, stderr="Traceback ...\nValueError: boom\n"), "resume") is None
    )


def test_a_usage_message_with_another_exit_code_is_left_to_the_scenario():
    assert usage_refused(Outcome(argv=["a"], returncode=1, stderr=ARGPARSE), "resume") is None
    assert usage_refused(None, "resume") is None
