"""The secret-word trace: a counterfactual a 135M instruct model demonstrably gets right (issue 29).

A keeper says a secret word, a chatter talks about the weather, a user asks for the word and the
reporter answers; the reward is exact match against "The secret word is PINEAPPLE" (the sentence the
reporter's system prompt asks for). Removing the keeper's message takes the word out of every
re-generated prompt; removing the chatter's should change nothing. The removed message is second, so
the other one stays before the fork in both arms, and the user's question is a `human_intervention`:
replayed as recorded, never re-generated. Used by tests/trainer/rollout/test_counterfactual_meaning_live.py
and bench/bench_real_model.py (no Django: the bench runs without settings).
"""

from swarmscope.model import Agent, Event, Trace

SECRET = "PINEAPPLE"


def secret_word_trace(removed: str) -> Trace:
    """The trace, with the message of `removed` ("keeper" or "chatter") second; its event id is
    f"{removed}-says"."""
    said = {
        "chatter": Event("chatter-says", 0.0, "message", "chatter", content="It is sunny today."),
        "keeper": Event("keeper-says", 0.0, "message", "keeper", content=f"The secret word is {SECRET}."),
    }
    first, second = said["chatter" if removed == "keeper" else "keeper"], said[removed]
    second.t = 1.0
    events = [
        first,
        second,
        Event("user-asks", 2.0, "human_intervention", "user", content="What is the secret word?"),
        Event("reporter-answers", 3.0, "message", "reporter", content=f"The secret word is {SECRET}."),
    ]
    agents = [
        Agent("chatter", system_prompt="You talk about the weather in one short sentence."),
        Agent("keeper", system_prompt="You keep the secret word."),
        Agent("user", role="human"),
        Agent("reporter", system_prompt="You answer in one sentence of the form: The secret word is WORD."),
    ]
    attributes = {"ground_truth": f"The secret word is {SECRET}", "synthetic_time": True}
    return Trace("native", "secret-word", name="secret word", events=events, agents=agents, attributes=attributes)
