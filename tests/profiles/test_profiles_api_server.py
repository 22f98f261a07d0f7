"""One `hermes serve` for several profiles (`api_server.profiles`): each under `/p/<profile>/v1`,
each opened only by the key in its own `.env`, as Hermes' gateway serves them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import HERMES, hermes, llm_config, make_folder_plugin
from tests.helpers.api_server import KEY, Serve, call

ALPHA_KEY, BETA_KEY = "alpha-key-0123456789abcdef", "beta-key-0123456789abcdef"


# A plugin written for Hermes: where it keeps its files is Hermes' `get_hermes_home()`.
WITNESS = """
import os
from hermes_constants import get_hermes_home, get_env_path

def register(ctx):
    def seen(**kwargs):
        with open(os.path.join(str(ctx.hermes_home), "seen.txt"), "a") as out:
            out.write(f"{ctx.profile_name} {get_hermes_home()} {get_env_path()}\\n")

    ctx.register_hook("pre_llm_call", seen)
"""


@pytest.fixture
def served(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    monkeypatch.setenv("API_SERVER_KEY", KEY)  # the serving (default) profile's key, in its environment
    llm_server.answer(lambda body: "answer to: " + str(body["messages"][-1]["content"]))
    llm_config(home, llm_server.url, "api_server:\n  profiles: [alpha, beta, shut]\n")
    for name, key in (("alpha", ALPHA_KEY), ("beta", BETA_KEY), ("shut", None)):
        hermes("profile", "create", name)
        profile = home / "profiles" / name
        make_folder_plugin(profile / "plugins", "witness", WITNESS, "name: witness\n")
        llm_config(profile, llm_server.url, "plugins:\n  enabled: [witness]\n")
        if key:
            (profile / ".env").write_text(f"# {name}'s secrets\nAPI_SERVER_KEY={key}\n")
    with Serve() as server:
        yield server


def sessions(name: str) -> list[dict[str, object]]:
    return json.loads(hermes("-p", name, "sessions", "list", "--json").stdout)


def test_each_profile_answers_under_its_prefix_with_its_own_key(served: Serve, home: Path) -> None:
    served.wait_for(r"/p/shut/v1 hermes serve: profile shut, closed")
    alpha = f"{served.root}/p/alpha/v1"
    answer = served.client(ALPHA_KEY)
    answer.base_url = alpha  # the stock SDK pointed at the profile's base URL
    reply = answer.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hi alpha"}])
    assert reply.choices[0].message.content == "answer to: hi alpha"
    status, body, _ = call(f"{served.root}/p/beta/v1/responses", {"input": "hi beta"}, key=BETA_KEY)
    assert status == 200 and body["output"][0]["content"][0]["text"] == "answer to: hi beta"
    assert call(f"{served.root}/p/beta/v1/responses/{body['id']}", key=BETA_KEY)[0] == 200
    assert call(f"{served.url}/responses/{body['id']}")[0] == 404  # the serving profile's store does not have it
    assert [len(sessions(name)) for name in ("default", "alpha", "beta", "shut")] == [0, 1, 1, 0]
    assert call(f"{served.url}/models")[0] == 200  # the serving profile keeps /v1 with its key
    for name in ("alpha", "beta"):  # each profile's plugins ran as that profile, in its own home
        profile = home / "profiles" / name
        assert (profile / "seen.txt").read_text() == f"{name} {profile} {profile / '.env'}\n"


REFUSED = [
    ("/p/alpha/v1/models", BETA_KEY, 401, "Invalid API key"),  # another profile's key
    ("/p/alpha/v1/models", KEY, 401, "Invalid API key"),  # the serving profile's key
    ("/p/alpha/v1/models", None, 401, "Invalid API key"),
    ("/p/shut/v1/models", KEY, 401, "no API_SERVER_KEY"),  # no key of its own: closed
    ("/p/shut/v1/chat/completions", ALPHA_KEY, 401, "no API_SERVER_KEY"),
    ("/p/ghost/v1/models", ALPHA_KEY, 404, "'ghost' is not served here"),
    ("/p/default/v1/models", KEY, 404, "'default' is not served here"),
    ("/v1/models", ALPHA_KEY, 401, "Invalid API key"),  # a profile's key is not the serving profile's
]


def test_a_request_without_that_profiles_key_is_refused(served: Serve) -> None:
    for path, key, status, says in REFUSED:
        body = {"messages": [{"role": "user", "content": "x"}]} if path.endswith("completions") else None
        got, answer, _ = call(f"{served.root}{path}", body, key=key)
        assert got == status and says in answer["error"]["message"], (path, key, answer)
    assert call(f"{served.root}/p/alpha/v1/models", key=ALPHA_KEY)[0] == 200


def test_a_listed_profile_that_does_not_exist_stops_serve_with_one_line(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "api_server:\n  profiles: [nowhere]\n")
    result = subprocess.run([str(HERMES), "serve", "--port", "0"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.startswith("hermes: error: no profile 'nowhere'") and result.stderr.count("\n") == 1
