"""The next-turn validator on hand-built conversations: what real provider APIs accept and what they refuse."""

from plugpull.checks.history import next_turn, request_problem, request_problems, shape_problem


def user(text="Please refund order A-1001."):
    return {"role": "user", "content": text}


def calling(*ids, text=""):
    return {"role": "assistant", "content": text, "tool_calls": [{"id": i, "name": "refund"} for i in ids]}


def result(call_id):
    return {"role": "tool", "content": "refunded", "tool_call_id": call_id}


def answer(text="Refund for order A-1001 is done."):
    return {"role": "assistant", "content": text}


def test_a_whole_turn_with_its_tool_result_and_a_next_question_is_valid():
    assert request_problems([user(), calling("c1"), result("c1"), answer(), user("Is it done?")]) == []


def test_a_system_prompt_and_two_tool_calls_answered_in_any_order_are_valid():
    history = [{"role": "system", "content": "be brief"}, user(), calling("c1", "c2"), result("c2"), result("c1")]
    assert request_problem(history) is None


def test_a_tool_result_followed_by_a_user_message_is_valid():
    # A cancel after the tool but before the answer: the history ends in a tool result, then the next question.
    assert request_problem([user(), calling("c1"), result("c1"), user("Is it done?")]) is None


def test_a_tool_call_without_its_result_before_the_next_question_is_refused_as_openai_and_anthropic_do():
    problem = request_problem(next_turn([user(), calling("c1")], "Is it done?"))
    assert problem.startswith("message 2's tool call refund (c1) had no tool result before message 3 (user)")
    assert "must be followed by tool messages responding to each 'tool_call_id'" in problem
    assert "tool_use ids were found without tool_result blocks" in problem


def test_one_of_two_calls_left_unanswered_is_named():
    problem = request_problem([user(), calling("c1", "c2"), result("c1"), user("next")])
    assert problem.startswith("message 2's tool call refund (c2) had no tool result before message 4 (user)")


def test_a_request_ending_in_an_unanswered_call_is_refused():
    assert request_problem([user(), calling("c1")]).startswith(
        "message 2's tool call refund (c1) had no tool result before the end of the request"
    )


def test_a_tool_result_whose_call_was_never_saved_is_refused():
    problem = request_problem([user(), result("c1"), answer(), user("next")])
    assert problem.startswith("message 2 is a tool result for call c1, which no assistant message before it made")
    assert "must be a response to a preceeding message with 'tool_calls'" in problem


def test_a_tool_result_answering_an_older_turn_is_refused():
    problem = request_problem([user(), calling("c1"), result("c1"), answer(), user("again"), result("c1")])
    assert problem.startswith("message 6 is a tool result for call c1")


def test_two_assistant_turns_in_a_row_are_refused():
    problem = request_problem([user(), answer("Refund for"), answer("Refund for order A-1001 is done."), user()])
    assert problem.startswith("messages 2 and 3 are two assistant turns in a row")
    assert "alternate between user and model" in problem


def test_every_problem_is_listed_in_order():
    problems = request_problems([user(), calling("c1"), answer(), result("c9")])
    assert [p.split(" (")[0] for p in problems] == [
        "message 2's tool call refund",
        "messages 2 and 3 are two assistant turns in a row",
        "message 4 is a tool result for call c9, which no assistant message before it made",
    ]


def test_what_is_not_a_conversation_is_said_so():
    assert shape_problem({"role": "user"}) == "a conversation must be a list of messages"
    assert shape_problem([user(), {"role": "robot"}]).startswith("message 2 has role 'robot'")
    assert shape_problem([{"role": "tool", "content": "x"}]) == "message 1 is a tool result without a tool_call_id"
    assert request_problem([{"role": "assistant", "tool_calls": [{"name": "refund"}]}]) == (
        "message 1 has a tool call without an id"
    )
