"""`AgentCall.plain_json`, a fact about a call's input and output that only `of_plain_json`
sets: any other call made from a marked one (replaced, with a run id, without content, read
back from the queue's form) is made without it, so it never outlives the content it is about;
it is no field of the queue's form, of the keywords or of equality."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from scorewatch.core.call import CALL_FIELDS, AgentCall, CallFields

pytestmark = pytest.mark.unit

_FIELDS: CallFields = {
    "input": {"inputMessages": [{"role": "user", "content": "Where is order 7?"}]},
    "output": [{"role": "assistant", "content": "Shipped."}],
    "target": "shop",
    "trace_id": "0af7651916cd43dd8448eb211c80319c",
    "span_id": "b7ad6b7169203331",
    "run_id": "b7ad6b7169203331",
    "metadata": {"spanName": "invoke_agent"},
    "score_source": "trace",
}


def test_only_of_plain_json_marks_a_call() -> None:
    marked = AgentCall.of_plain_json(**_FIELDS)
    unmarked = AgentCall(**_FIELDS)
    assert marked.plain_json and not unmarked.plain_json
    assert marked == unmarked  # a fact about the values, not one of them
    assert "plain_json" not in CALL_FIELDS and "plain_json" not in marked.to_dict()
    assert "plain_json" not in repr(marked)
    with pytest.raises(TypeError):
        AgentCall(plain_json=True)  # type: ignore[call-arg]


def test_every_call_made_from_a_marked_one_is_unmarked() -> None:
    marked = AgentCall.of_plain_json(**_FIELDS)
    made = [
        dataclasses.replace(marked),
        dataclasses.replace(marked, input={"at": object()}),
        marked.with_run_id("other"),
        marked.without_content(),
        AgentCall.from_dict(marked.to_dict()),
        AgentCall(**marked.to_dict()),
    ]
    assert [call.plain_json for call in made] == [False] * len(made)
    # A copy of the same values (a pickle, as a process pool sends it) keeps what it says.
    assert pickle.loads(pickle.dumps(marked)).plain_json


def test_the_fact_cannot_be_set_on_a_made_call() -> None:
    call = AgentCall(**_FIELDS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.plain_json = True  # type: ignore[misc]
