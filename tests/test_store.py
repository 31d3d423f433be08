import pytest

from plugpull.store import Drop, Reply, Store, StoreError, identity

USER = {"role": "user", "content": "refund order A-1001"}
CALL = {"type": "function_call", "call_id": "call_1", "name": "refund", "arguments": "{}"}


def add(store, *items, session="s"):
    return store.call("add_items", session, {"items": list(items)})


def test_add_items_keeps_exactly_what_it_is_given_in_order():
    store = Store()
    assert add(store, USER, CALL) == Reply(None)
    assert add(store, USER) == Reply(None)  # no dedup: the same item twice is stored twice
    assert store.items("s") == [USER, CALL, USER]


def test_get_items_returns_the_latest_n_in_chronological_order_like_sqlite_session():
    store = Store()
    add(store, {"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "user", "content": "c"})
    texts = lambda reply: [i["content"] for i in reply.result]  # noqa: E731
    assert texts(store.call("get_items", "s", {"limit": 2})) == ["b", "c"]
    assert texts(store.call("get_items", "s", {})) == ["a", "b", "c"]
    assert store.call("get_items", "s", {"limit": 0}).result == []


def test_reads_are_not_numbered_and_every_write_is():
    store = Store()
    store.call("get_items", "s", {})
    add(store, USER)
    store.call("pop_item", "s", {})
    store.call("clear_session", "s", {})
    assert [(w.number, w.method) for w in store.writes] == [(1, "add_items"), (2, "pop_item"), (3, "clear_session")]
    assert len(store.reads) == 1


def test_pop_item_returns_and_removes_the_newest_item():
    store = Store()
    add(store, USER, CALL)
    assert store.call("pop_item", "s", {}).result == CALL
    assert store.items("s") == [USER]
    assert store.writes[-1].items == [CALL]


def test_write_lost_does_not_keep_the_items_and_drops_the_reply():
    store = Store(fault=(2, "write-lost"))
    add(store, USER)
    assert add(store, CALL) == Drop(2, "write-lost")
    assert store.items("s") == [USER]
    w = store.writes[1]
    assert (w.kept, w.answered, w.fault, w.items) == (False, False, "write-lost", [CALL])


def test_ack_lost_keeps_the_items_and_drops_the_reply():
    store = Store(fault=(1, "ack-lost"))
    assert add(store, USER).dropped
    assert store.items("s") == [USER]
    w = store.writes[0]
    assert (w.kept, w.answered, w.fault) == (True, False, "ack-lost")


def test_a_fault_lands_once_only_on_its_write_number_across_phases():
    store = Store(fault=(1, "ack-lost"))
    assert add(store, USER).dropped
    store.phase = "resume"
    assert not add(store, USER).dropped
    assert [(w.phase, w.answered) for w in store.writes] == [("start", False), ("resume", True)]


def test_a_lost_pop_keeps_the_item():
    store = Store(fault=(2, "write-lost"))
    add(store, USER)
    assert store.call("pop_item", "s", {}).dropped
    assert store.items("s") == [USER]


def test_sessions_are_kept_apart():
    store = Store()
    add(store, USER, session="a")
    assert store.items("b") == []
    assert store.items("a") == [USER]


def test_counts_say_how_often_each_written_item_is_stored():
    store = Store(fault=(1, "write-lost"))
    lost = {"role": "user", "content": "lost one"}
    add(store, lost)
    add(store, USER)
    add(store, USER)
    assert store.counts() == {identity(lost): 0, identity(USER): 2}


def test_identity_matches_one_message_written_in_two_shapes():
    as_text = {"role": "user", "content": "note tok123"}
    as_parts = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "note tok123"}]}
    assert identity(as_text) == identity(as_parts)


def test_identity_of_a_tool_call_is_its_call_id_whatever_else_changes():
    assert identity(CALL) == identity({**CALL, "id": "fc_9", "status": "completed"})
    assert identity(CALL) != identity({**CALL, "type": "function_call_output", "output": "ok"})


def test_a_write_carries_a_token_only_in_a_user_message():
    store = Store()
    add(store, USER)
    add(store, {"role": "user", "content": [{"type": "input_text", "text": "staged tok123"}]}, CALL)
    add(
        store, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "you said tok123"}]}
    )
    assert store.writes_carrying("tok123") == [2]
    assert store.occurrences("tok123") == 1


@pytest.mark.parametrize(
    "method,args",
    [("drop_table", {}), ("add_items", {"items": "not a list"}), ("get_items", {"limit": "3"})],
)
def test_a_call_no_session_makes_is_refused_and_not_numbered(method, args):
    store = Store(fault=(1, "write-lost"))
    with pytest.raises(StoreError):
        store.call(method, "s", args)
    assert store.writes == []


def test_an_unknown_fault_point_is_refused():
    with pytest.raises(ValueError):
        Store(fault=(1, "disk-full"))


def test_per_run_values_are_named_by_first_appearance_so_two_runs_compare():
    from plugpull.store import identity, renamed, run_names

    def run(run_id, call_id, token):
        items = [
            {"role": "user", "content": f"refund [run {run_id}]"},
            {"type": "function_call", "call_id": call_id},
            {"role": "user", "content": f"note [staged-input {token}]"},
        ]
        writes = [{"items": [item]} for item in items]
        names = run_names(writes, token, [call_id, run_id])
        return renamed({identity(i): 1 for i in items}, names)

    assert (
        run("r1", "call_1", "t1")
        == run("r2", "call_2", "t2")
        == {
            "message:user:refund [run <run value 1>]": 1,
            "function_call:<run value 2>": 1,
            "message:user:note [staged-input <staged input>]": 1,
        }
    )
