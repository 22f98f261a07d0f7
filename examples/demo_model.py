"""The scripted demo model of `python3 dev.py run`: not a language model.

It is the test kit's `ScriptedServer` (an OpenAI-compatible chat completions server on
127.0.0.1, real HTTP) answering the main job's task from a fixed script, so the agent loop,
the example plugin's tool, its hook, the memory provider and the session store all run for
real without an endpoint. Every reply is labelled as scripted; point `dev.py run` at a real
endpoint (HERMES_DEMO_BASE_URL, HERMES_DEMO_MODEL) to have a model decide instead.

    python examples/demo_model.py     prints the server's base URL, serves until stdin closes
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when serving only: dev.py reads TASK with a Python that has no hermes-core
    from hermes_core.testing import ScriptedServer

SENTENCE = "the cat sat on the mat with the hat"
TASK = (f"Use the text_stats tool to count the words of this sentence, tell me its most common word, "
        f"and save that in memory: {SENTENCE}")
LABEL = "[scripted demo model]"
FACT = f'The most common word of "{SENTENCE}" is "the" (3 of its 9 words).'
ANSWER = f'{LABEL} text_stats counted 9 words; the most common word is "the", 3 times. I saved that in memory.'
OVER = f"{LABEL} My script is over: I only know the main job's task. Point dev.py run at a real model to chat."


def script(server: ScriptedServer) -> None:
    """Queue the replies to TASK: call text_stats, then memory_save, then answer."""
    from hermes_core.testing import tool_call

    server.reply(f"{LABEL} Counting with text_stats.",
                 tool_calls=[tool_call("text_stats", {"text": SENTENCE, "top": 1}, "call_text_stats")])
    server.reply(f"{LABEL} Saving the answer in memory.",
                 tool_calls=[tool_call("memory_save", {"content": FACT, "tags": ["demo"]}, "call_memory_save")])
    server.reply(ANSWER)
    server.always(OVER)


def main() -> int:
    from hermes_core.testing import ScriptedServer

    with ScriptedServer() as server:
        script(server)
        print(server.url, flush=True)
        sys.stdin.read()  # serve until the caller closes our stdin (or exits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
