"""The API server: the reference agent and its plugins behind an OpenAI-compatible HTTP API.

`hermes serve` runs it (and so does Hermes' `api_server` gateway platform): Hermes' routes with
OpenAI's shapes, so the stock `openai` SDK and the chat UIs built on it work unchanged.

- `app`: the Starlette app, chat completions, models, capabilities, health;
- `responses`, `runs`, `sessions`, `jobs`: the Responses API, runs with their events, the sessions
  API, the cron jobs;
- `turns`: one agent turn per request, in a worker thread, its progress as events;
- `keys`: `API_SERVER_KEY` and named keys with their endpoints, tools and budget; `settings`: where it
  listens and its model's name, from Hermes' variables and `platforms.api_server`;
- `store`: stored responses, runs, idempotency keys and owners (SQLite); `owners`: whose each
  session and cron job is, asked by every route that names one;
- `inputs`, `http`: what a request's messages mean, errors, bodies and server-sent events;
- `profiles`: more profiles behind the same server (`api_server.profiles`), each at `/p/<name>/v1`
  with its own keys;
- `openapi`: the OpenAPI document of every route (`GET /openapi.json`), built from the route table.

Needs the `server` extra (`pip install 'hermes-core[server]'`: Starlette and uvicorn).
"""

from .app import ApiServer
from .keys import ApiKey, Keys
from .profiles import ProfileServer, profile_server, profiles_app
from .settings import DEFAULT_MODEL_NAME, DEFAULT_PORT, Settings, settings

__all__ = ["DEFAULT_MODEL_NAME", "DEFAULT_PORT", "ApiKey", "ApiServer", "Keys", "ProfileServer", "Settings",
           "profile_server", "profiles_app", "settings"]
