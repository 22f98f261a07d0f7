"""Every key of `$HERMES_HOME/config.yaml` that hermes-core reads: its type, default and help.

This table is the reference for operators and the one place a key's default is written.
Code reads a key through it (`config.read(config_keys.HOOK_CALLBACK_TIMEOUT)`), so a value of
the wrong type is an error that names the key and what it should be, and `hermes plugins
doctor` warns about keys the table does not know, naming the nearest one that it does.

A `*` in a name stands for an id given when the key is read: a plugin id (ids may hold dots
and slashes), a task or an agent name: `config.read(config_keys.PLUGIN_SETTINGS, "word-tools")`.
The slots' keys (`context.engine`, `memory.provider`, `<slot>.provider`) are declared with
their slots (`SlotDecl`), so a host's own slot has its key too.

Imported on the `hermes plugins list` path: this module imports nothing beyond `typing`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._prompt_files import CONTEXT_FILE_MAX_CHARS as CONTEXT_FILE_MAX_CHARS, PROMPT_FILES as PROMPT_FILES
from ._prompt_files import MEMORY_ENABLED as MEMORY_ENABLED, MEMORY_USER_PROFILE_ENABLED as MEMORY_USER_PROFILE_ENABLED
from ._observability import OBSERVABILITY_OTLP_ENDPOINT, OBSERVABILITY_RECORD_CONTENT, OBSERVABILITY_SLOW_HOOK
from ._budgets import (  # re-exported: the keys are read as config_keys.<NAME>
    BUDGET_NAMES as BUDGET_NAMES, BUDGETS_ON_STORE_ERROR as BUDGETS_ON_STORE_ERROR,
    BUDGETS_RESERVATION_TTL as BUDGETS_RESERVATION_TTL, BUDGETS_UNPRICED_COST as BUDGETS_UNPRICED_COST,
    CALLER_BUDGET as CALLER_BUDGET, FLEET_BUDGET as FLEET_BUDGET, MODEL_BUDGET as MODEL_BUDGET,
    PLUGIN_LLM_BUDGET as PLUGIN_LLM_BUDGET, PLUGINS_LLM_BUDGET as PLUGINS_LLM_BUDGET,
)
from ._budgets import ZONE, _budget, _zone
from ._values import (
    _EMPTY, COUNT, FLAG, MAPPING, NAMES, POSITIVE, RATIO, SECONDS, TEXT, Key, _anything, _count,
    _entries, _flag, _mapping, _names, _one_of, _positive, _ratio, _seconds, _text,
)

__all__ = ["Key", "KEYS", "unknown_keys"]

TOOL_CHOICES = ("auto", "required", "none", "omit")

# -- plugins ----------------------------------------------------------------------------------

PLUGINS_ENABLED: Key[list[str]] = Key("plugins.enabled", NAMES, _names, [],
                                      "plugin ids (or manifest names) to load; plugins are opt-in")
PLUGINS_DISABLED: Key[list[str]] = Key("plugins.disabled", NAMES, _names, [],
                                       "plugin ids never to load; wins over everything")
HOOK_CALLBACK_TIMEOUT = Key("plugins.hook_callback_timeout", SECONDS, _seconds, 30.0,
                            "seconds each lifecycle hook callback may run; 0 means no limit")
# -- plugin code's time limits ---------------------------------------------------------------

TOOLS_TIMEOUT = Key("tools.timeout", SECONDS, _seconds, 120.0,
                    "seconds a tool call may run before it is an error result the model sees (0: no limit)")
TOOL_TIMEOUT: Key[float | None] = Key("tools.timeouts.*", SECONDS, _seconds, None,
                                      "seconds tool <name> may run, in place of tools.timeout (0: no limit)")
COMMANDS_TIMEOUT = Key("commands.timeout", SECONDS, _seconds, 120.0,
                       "seconds a slash command may run before it fails with a time-limit error (0: no limit)")
PLUGINS_LAZY = Key("plugins.lazy", FLAG, _flag, True,
                   "a plugin whose registrations are remembered and only tools and commands is imported "
                   "when first needed (hosts that load lazily)")
PLUGINS_INSTALL_POLICY = Key("plugins.install_policy", "safe or caution", _one_of("safe", "caution"), "safe",
                             "what `plugins install --yes` accepts: safe (nothing asks) or caution (asks too)")
PLUGINS_GUARDDOG = Key("plugins.guarddog", "off, note or ask", _one_of("off", "note", "ask"), "note",
                       "GuardDog's findings at install, when installed: notes, ask (its suspicious labels), off")
PLUGINS_VULNERABILITY_SERVICE = Key(
    "plugins.vulnerability_service", TEXT, _text, "pypi",
    "where `plugins install|audit` look known vulnerabilities up (pip-audit): pypi, or an OSV query API's URL "
    "(https://api.osv.dev/v1/query)")
PLUGIN_ENTRIES = Key("plugins.entries", MAPPING, _mapping, _EMPTY, "per-plugin settings and grants, by plugin id")
PLUGIN_SETTINGS = Key("plugins.entries.*.settings", MAPPING, _mapping, _EMPTY,
                      "the plugin's own settings (its ctx.config), read-only to it", free=True)
PLUGIN_ALLOW_TOOL_OVERRIDE = Key("plugins.entries.*.allow_tool_override", FLAG, _flag, False,
                                 "the plugin may replace a tool another plugin registered (override=True)")
PLUGIN_GRANTED_CAPABILITIES: Key[list[str]] = Key(
    "plugins.entries.*.granted_capabilities", NAMES, _names, [],
    "capabilities granted to the plugin by Hermes' ids (tools.override, llm.provider_override, llm.model_override, "
    "llm.agent_id_override, llm.profile_override, ...): each counts as its allow_* flag")
PLUGIN_CAPABILITIES_CONSENT = Key(
    "plugins.entries.*.capabilities_consent", MAPPING, _mapping, _EMPTY,
    "written by `hermes plugins install`: the sha256 of the capability set the user answered about, and when",
    free=True)
PLUGIN_LAZY = Key("plugins.entries.*.lazy", FLAG, _flag, True,
                  "false: the plugin is imported at every start even where plugins.lazy holds")
PLUGIN_ISOLATION = Key("plugins.entries.*.isolation", "process or none", _one_of("process", "none"), "none",
                       "process: the plugin runs in a child process of its own (a crash is a failed call)")
PLUGIN_MEMORY_MB = Key("plugins.entries.*.memory_mb", COUNT, _count, 0,
                       "an isolated plugin's address-space limit in MB (0: none)")
PLUGIN_PYTHON = Key("plugins.entries.*.python", TEXT, _text, "",
                    "the interpreter an isolated plugin's process runs on (another venv's bin/python)")
PLUGIN_MCP_ALLOWLIST: Key[list[str]] = Key("plugins.entries.*.mcp_allowlist", NAMES, _names, [],
                           "MCP servers the plugin's ctx.call_mcp may call (deny by default; no wildcard)")
PLUGIN_LLM = Key("plugins.entries.*.llm", MAPPING, _mapping, _EMPTY, "what the plugin's ctx.llm may override")
LLM_ALLOW_PROVIDER_OVERRIDE = Key("plugins.entries.*.llm.allow_provider_override", FLAG, _flag, False,
                                  "ctx.llm may choose its provider")
LLM_ALLOWED_PROVIDERS = Key("plugins.entries.*.llm.allowed_providers", "a list of strings or '*'", _anything, None,
                            "the providers it may choose (absent: any; []: none; '*': any)")
LLM_ALLOW_MODEL_OVERRIDE = Key("plugins.entries.*.llm.allow_model_override", FLAG, _flag, False,
                               "ctx.llm may choose its model")
LLM_ALLOWED_MODELS = Key("plugins.entries.*.llm.allowed_models", "a list of strings or '*'", _anything, None,
                         "the models it may choose (absent: any; []: none; '*': any)")
LLM_ALLOW_AGENT_ID_OVERRIDE = Key("plugins.entries.*.llm.allow_agent_id_override", FLAG, _flag, False,
                                  "ctx.llm may call another agent's model (agent_id=)")
LLM_ALLOW_PROFILE_OVERRIDE = Key("plugins.entries.*.llm.allow_profile_override", FLAG, _flag, False,
                                 "ctx.llm may use another credential profile of auth.json (profile=)")

# -- LLM budgets: in ._budgets (every holder's section, and budgets.*) --------------------------------

# -- the model, and the host's own side tasks --------------------------------------------------


def _route(prefix: str, what: str) -> tuple[Key[str], Key[str], Key[str], Key[str], Key[bool]]:
    """The keys of one route section (the main model, an auxiliary task, another agent's model)."""
    return (
        Key(f"{prefix}.provider", TEXT, _text, "", f"{what}: openrouter, openai, anthropic or custom"),
        Key(f"{prefix}.model", TEXT, _text, "", f"{what}: the model to run"),
        Key(f"{prefix}.base_url", TEXT, _text, "", f"{what}: the server's URL (required for custom)"),
        Key(f"{prefix}.api_key_env", TEXT, _text, "", f"{what}: the environment variable holding the key"),
        Key(f"{prefix}.supports_vision", FLAG, _flag, True, f"{what}: false for a text-only model"),
    )


MODEL_ROUTE = _route("model", "the main model")
MODEL_MODEL = MODEL_ROUTE[1]
ENTRIES = "a list of mappings with provider and model"
MODEL_FALLBACK: Key[list[Mapping[str, Any]]] = Key(
    "model.fallback", ENTRIES, _entries, [], "tried in order on 429, 5xx, connection errors and timeouts")
MODEL_PRICING = Key("model.pricing", MAPPING, _mapping, _EMPTY,
                    "USD per million tokens by model name ({input, output, cache_read, cache_write})", free=True)
MODEL_CONTEXT_LENGTH = Key("model.context_length", POSITIVE, _positive, 128_000,
                           "the model's context window, in tokens")
TOOL_CHOICE = "auto, required, none or omit"
MODEL_TOOL_CHOICE = Key("model.tool_choice", TOOL_CHOICE, _one_of(*TOOL_CHOICES), "",
                        "the tool_choice sent to this provider with tools (unset: agent.tool_choice); "
                        "also in each model.fallback entry")
MODEL_NULL_TOOL_CALL_CONTENT = Key("model.null_tool_call_content", FLAG, _flag, False,
                                   "send null, not \"\", as the content of an assistant message with tool calls "
                                   "(for a server that refuses \"\"); also in each model.fallback entry")
MODEL_STREAM = Key("model.stream", FLAG, _flag, True,
                   "false: never ask this provider to stream the agent's answers (a server that cannot stream); "
                   "also in each model.fallback entry")
MODEL_TIMEOUT = Key("model.timeout", SECONDS, _seconds, 120.0, "seconds the agent waits for one answer of its model")
AUXILIARY_TIMEOUT = Key("auxiliary.timeout", SECONDS, _seconds, 30.0,
                        "seconds a side task or a plugin's ctx.llm call may take, unless its task sets one")
AUXILIARY_TASK_TIMEOUT = Key("auxiliary.*.timeout", SECONDS, _seconds, 0.0,
                             "seconds for this task (compression, plugin_llm, ...); 0: auxiliary.timeout")
AUXILIARY_ROUTE = _route("auxiliary.*", "a side task's model (unset: the main model)")
RETRY_AFTER_CAP = Key("auxiliary.plugin_llm.retry_after_cap", SECONDS, _seconds, 10.0,
                      "the longest Retry-After ctx.llm waits for before falling back")
AGENT_MODEL = Key("agents.*.model", MAPPING, _mapping, _EMPTY, "another agent's model, for plugins granted agent_id")
AGENT_ROUTE = _route("agents.*.model", "another agent's model")
AGENT_FALLBACK: Key[list[Mapping[str, Any]]] = Key("agents.*.model.fallback", ENTRIES, _entries, [],
                                                   "that agent's fallback chain")
AGENT_PRICING = Key("agents.*.model.pricing", MAPPING, _mapping, _EMPTY, "that agent's prices", free=True)

# -- MCP servers whose tools the agent gets (Hermes' keys) -----------------------------------


ACP_AGENTS = Key("acp_agents", MAPPING, _mapping, _EMPTY,
                 "other ACP agents the agent may hand a task to, by name; each is its tool acp__<name>")
ACP_AGENT = Key("acp_agents.*", MAPPING, _mapping, _EMPTY, "one ACP agent: the command that runs it over stdio")
ACP_AGENT_COMMAND = Key("acp_agents.*.command", TEXT, _text, "", "the program that runs the agent (speaking ACP on stdio)")
ACP_AGENT_ARGS: Key[list[str]] = Key("acp_agents.*.args", NAMES, _names, [], "its arguments")
ACP_AGENT_ENV = Key("acp_agents.*.env", MAPPING, _mapping, _EMPTY,
                    "variables its environment gets besides PATH, HOME and the like (never the others)", free=True)
ACP_AGENT_CWD = Key("acp_agents.*.cwd", TEXT, _text, "", "the folder its session works in (default: the current one)")
ACP_AGENT_DESCRIPTION = Key("acp_agents.*.description", TEXT, _text, "", "what it is good at, for the model")
ACP_AGENT_TIMEOUT = Key("acp_agents.*.timeout", SECONDS, _seconds, 600.0,
                        "seconds one task may take; then it is cancelled and its answer so far returned")
ACP_AGENT_ENABLED = Key("acp_agents.*.enabled", FLAG, _flag, True, "false: not offered")
ACP_END_GRACE = Key("acp.end_grace", SECONDS, _seconds, 10.0,
                    "hermes acp: when the editor closes its input, seconds its running requests may take to "
                    "finish before they are cancelled")
MCP_SERVERS = Key("mcp_servers", MAPPING, _mapping, _EMPTY,
                  "MCP servers by name; their tools are mcp__<server>__<tool>")
MCP_SERVER = Key("mcp_servers.*", MAPPING, _mapping, _EMPTY, "one MCP server: command (stdio) or url (HTTP)")
MCP_COMMAND = Key("mcp_servers.*.command", TEXT, _text, "", "the program that runs the server over stdio")
MCP_ARGS: Key[list[str]] = Key("mcp_servers.*.args", NAMES, _names, [],
                               "its arguments (${VAR} and ${env:VAR} are replaced)")
MCP_ENV = Key("mcp_servers.*.env", MAPPING, _mapping, _EMPTY,
              "variables its environment gets besides PATH, HOME and the like (never the others)", free=True)
MCP_CWD = Key("mcp_servers.*.cwd", TEXT, _text, "", "the folder it runs in")
MCP_URL = Key("mcp_servers.*.url", TEXT, _text, "", "the server's Streamable HTTP (or SSE) endpoint")
MCP_HEADERS = Key("mcp_servers.*.headers", MAPPING, _mapping, _EMPTY, "HTTP headers sent with every request", free=True)
MCP_TRANSPORT = Key("mcp_servers.*.transport", "stdio, http, streamable_http or sse",
                    _one_of("stdio", "http", "streamable_http", "sse"), "", "how to reach it (unset: stdio with a command, Streamable HTTP with a url)")
MCP_ENABLED = Key("mcp_servers.*.enabled", FLAG, _flag, True, "false: not started, its tools not offered")
MCP_TIMEOUT = Key("mcp_servers.*.timeout", SECONDS, _seconds, 300.0, "seconds one of its tool calls may take")
MCP_CONNECT_TIMEOUT = Key("mcp_servers.*.connect_timeout", SECONDS, _seconds, 60.0,
                          "seconds it may take to start and list its tools before it counts as failed")
MCP_AUTH = Key("mcp_servers.*.auth", "oauth", _one_of("oauth"), "",
               "oauth: the server (http or sse) wants an OAuth login, made once with hermes mcp login <name>")
MCP_OAUTH = Key("mcp_servers.*.oauth", MAPPING, _mapping, _EMPTY, "how to log in to it (with auth: oauth)")
MCP_OAUTH_SCOPE = Key("mcp_servers.*.oauth.scope", TEXT, _text, "",
                      "the scopes to ask for, space-separated (empty: those the server names)")
MCP_OAUTH_CLIENT_NAME = Key("mcp_servers.*.oauth.client_name", TEXT, _text, "hermes-core",
                            "the client name registered with the authorization server (shown on its consent page)")
MCP_OAUTH_CLIENT_ID = Key("mcp_servers.*.oauth.client_id", TEXT, _text, "",
                          "a client registered with the authorization server beforehand (no dynamic registration)")
MCP_OAUTH_CLIENT_SECRET = Key("mcp_servers.*.oauth.client_secret", TEXT, _text, "",
                              "that client's secret (${VAR} reads it from the environment); sent with HTTP Basic")
MCP_OAUTH_REDIRECT_PORT = Key("mcp_servers.*.oauth.redirect_port", COUNT, _count, 0,
                              "the loopback port hermes mcp login listens on (0: a free one, kept once registered)")
MCP_SAMPLING = Key("mcp_servers.*.sampling", MAPPING, _mapping, _EMPTY,
                   "whether the server may ask the host's model for completions (sampling/createMessage)")
MCP_SAMPLING_ENABLED = Key("mcp_servers.*.sampling.enabled", FLAG, _flag, False,
                           "true: its sampling requests are answered by the host's model, as the caller mcp:<name>")
MCP_SAMPLING_MAX_TOKENS = Key("mcp_servers.*.sampling.max_tokens_cap", COUNT, _count, 4096,
                              "the most tokens one answer may take, whatever the server asks")
MCP_TOOLS = Key("mcp_servers.*.tools", MAPPING, _mapping, _EMPTY, "which of its tools the agent gets")
MCP_INCLUDE: Key[list[str]] = Key("mcp_servers.*.tools.include", NAMES, _names, [],
                                  "only tools matching these globs (wins)")
MCP_EXCLUDE: Key[list[str]] = Key("mcp_servers.*.tools.exclude", NAMES, _names, [],
                                  "not the tools matching these globs")

# -- the reference agent and the built-in engines ----------------------------------------------

AGENT_MAX_ITERATIONS = Key("agent.max_iterations", POSITIVE, _positive, 20,
                           "rounds of tool calls the reference agent allows in one turn")
AGENT_SYSTEM_PROMPT = Key("agent.system_prompt", TEXT, _text, "",
                          "the reference agent's system prompt (empty: its own)")
AGENT_TOOL_CHOICE = Key("agent.tool_choice", TOOL_CHOICE, _one_of(*TOOL_CHOICES), "auto",
                        "the tool_choice the agent sends with its tools (omit: send none; servers such as "
                        "llama.cpp's call no tool without one)")
COMPRESSION_THRESHOLD = Key("compression.threshold", RATIO, _ratio, 0.50,
                            "compressor: compress once the prompt fills this fraction of the window")
COMPRESSION_TARGET_RATIO = Key("compression.target_ratio", RATIO, _ratio, 0.20,
                               "compressor: pruning alone is enough when it brings the prompt under this fraction")
COMPRESSION_PROTECT_FIRST_N = Key("compression.protect_first_n", COUNT, _count, 3,
                                  "compressor: messages kept at the start (after the system prompt)")
COMPRESSION_PROTECT_LAST_N = Key("compression.protect_last_n", COUNT, _count, 20,
                                 "compressor: messages kept at the end (always with the last user message)")
LCM_THRESHOLD = Key("lcm.threshold", RATIO, _ratio, 0.50, "lcm: compress once the prompt fills this fraction")
LCM_PROTECT_FIRST_N = Key("lcm.protect_first_n", COUNT, _count, 3, "lcm: messages kept at the start")
LCM_PROTECT_LAST_N = Key("lcm.protect_last_n", COUNT, _count, 20, "lcm: messages kept at the end")
LCM_FAN_IN = Key("lcm.fan_in", POSITIVE, _positive, 4, "lcm: summary nodes folded into a parent node at a time")

# -- the messaging gateway (`hermes gateway run`) --------------------------------------------------

PLATFORMS = Key("platforms", MAPPING, _mapping, _EMPTY, "messaging platforms, each as platforms.<name>")
PLATFORM = Key("platforms.*", MAPPING, _mapping, _EMPTY, "one platform: enabled, token, api_key, home_channel, "
               "reply_to_mode, and its adapter's own settings (beside them or under extra)", free=True)
GATEWAY_PLATFORMS = Key("gateway.platforms", MAPPING, _mapping, _EMPTY,
                        "Hermes' other place for platforms.<name> (platforms: wins)", free=True)
APPROVALS_TIMEOUT = Key("approvals.timeout", SECONDS, _seconds, 300.0, "seconds a tool call put to a human "
                        "(a pre_tool_call hook's approve) waits for an answer in the chat; then it is denied")
GATEWAY_UNAUTHORIZED_DM = Key("gateway.unauthorized_dm_behavior", "pair or ignore", _one_of("pair", "ignore"), "pair",
                              "a direct message from a sender not let in: a pairing code (pair) or nothing")
GATEWAY_GROUP_SESSIONS = Key("gateway.group_sessions_per_user", FLAG, _flag, True,
                             "in a group chat, one conversation per member (false: one for the group)")
GATEWAY_THREAD_SESSIONS = Key("gateway.thread_sessions_per_user", FLAG, _flag, False,
                              "in a thread, one conversation per member (false: one for the thread)")
GATEWAY_CONNECT_TIMEOUT = Key("gateway.connect_timeout", SECONDS, _seconds, 30.0,
                              "seconds a platform's adapter may take to connect")
GATEWAY_RECONNECT_DELAY = Key("gateway.reconnect_delay", SECONDS, _seconds, 30.0,
                              "seconds before a failed platform is connected again (doubling after each failure)")
GATEWAY_RECONNECT_MAX_DELAY = Key("gateway.reconnect_max_delay", SECONDS, _seconds, 300.0,
                                  "the longest wait between two attempts to connect a failed platform")
GATEWAY_SHUTDOWN_GRACE = Key("gateway.shutdown_grace", SECONDS, _seconds, 30.0,
                             "on SIGINT/SIGTERM, seconds running turns may take to finish before they are cancelled")
PLUGIN_GATEWAY_INJECTION = Key("plugins.entries.*.allow_gateway_injection", FLAG, _flag, False,
                               "the plugin's ctx.inject_message may start a turn in a gateway conversation")

# -- the API server (`hermes serve`, Hermes' api_server platform) -----------------------------------

API_ENDPOINTS = ("models", "chat", "responses", "runs", "sessions", "jobs")


def _endpoints(value: Any) -> list[str]:
    return [_one_of(*API_ENDPOINTS)(name) for name in _names(value)]


API_SERVER_KEYS = Key("api_server.keys", MAPPING, _mapping, _EMPTY,
                      "named API keys, each as api_server.keys.<name>: its own endpoints, tools and budget")
API_SERVER_KEY = Key("api_server.keys.*", MAPPING, _mapping, _EMPTY, "one named API key")
API_KEY_ENV = Key("api_server.keys.*.key_env", TEXT, _text, "",
                  "the environment variable that holds the key's secret (never the secret itself)")
API_KEY_ENDPOINTS: Key[list[str]] = Key("api_server.keys.*.endpoints", "a list of " + ", ".join(API_ENDPOINTS),
                                        _endpoints, list(API_ENDPOINTS), "what the key may call (others answer 403)")
API_KEY_TOOLS: Key[list[str]] = Key("api_server.keys.*.tools", NAMES, _names, [], "tool globs its agent is offered")
API_KEY_PLUGINS: Key[list[str]] = Key("api_server.keys.*.plugins", NAMES, _names, [],
                      "plugin ids whose tools its agent is offered (with tools:, either matches)")
API_KEY_BUDGET = _budget("api_server.keys.*.budget", "the key's")
API_SERVER_MAX_CONCURRENT = Key("api_server.max_concurrent_runs", POSITIVE, _positive, 10,
                                "agent turns running at once; a request beyond them answers 429")
API_SERVER_RETENTION_DAYS = Key("api_server.retention_days", "a number of days, 0 or more", _seconds, 30.0,
                                "days stored responses and runs are kept")
API_SERVER_MAX_STORED = Key("api_server.max_stored", POSITIVE, _positive, 10_000,
                            "stored responses (and runs) kept at most; the oldest go first")
API_SERVER_MAX_BODY = Key("api_server.max_body_bytes", POSITIVE, _positive, 4 * 1024 * 1024,
                          "the largest request body accepted (413 beyond)")
API_SERVER_PROFILES: Key[list[str]] = Key("api_server.profiles", NAMES, _names, [],
                                          "more profiles served by hermes serve, each under /p/<name>/v1 with the "
                                          "API_SERVER_KEY of its own .env (docs/profiles.md)")

# -- the shared state (docs/fleet.md) ---------------------------------------------------------------

STATE_URL = Key("state.url", "a postgresql:// URL", _text, "",
                "the database every host shares its state in (HERMES_STATE_URL wins); empty: SQLite under $HERMES_HOME")
STATE_LEASE = Key("state.lease_seconds", POSITIVE, _positive, 15,
                  "seconds a host's heartbeat holds its runs and claims; another host takes over after twice this")
STATE_REDIS_URL = Key("state.redis_url", "a redis:// URL", _text, "",
                      "the Redis server holding the budgets' hot counters (HERMES_REDIS_URL wins; the ledger stays the "
                      "truth); empty: the ledger alone")
STATE_POOL_SIZE = Key("state.pool_size", POSITIVE, _positive, 8,
                      "connections each host process keeps to the shared database at most")

# -- every HTTP host (`hermes serve`, `hermes mcp serve --http`, the gateway's webhook and api_server) --

HOSTING_ALLOWED_HOSTS: Key[list[str]] = Key(
    "hosting.allowed_hosts", NAMES, _names, [],
    "Host header values an HTTP host answers besides its own address (a reverse proxy's name, as name or "
    "name:port; '*': any); other names are refused (421), as a DNS-rebinding page sends them")
HOSTING_ALLOWED_ORIGINS: Key[list[str]] = Key(
    "hosting.allowed_origins", NAMES, _names, [],
    "browser origins (scheme://host[:port]) whose requests an HTTP host answers, with CORS headers, besides "
    "its own; other sites' are refused (403)")

# -- cron (`hermes cron`, ticked by `hermes gateway run`) ------------------------------------------

TIMEZONE = Key("timezone", ZONE, _zone, None, "the time zone of cron schedules and timestamps (HERMES_TIMEZONE wins; "
               "unset: this machine's)")
CRON_TICK_INTERVAL = Key("cron.tick_interval", SECONDS, _seconds, 60.0, "seconds between two ticks of the gateway's "
                         "scheduler")
CRON_TIME_LIMIT = Key("cron.time_limit", SECONDS, _seconds, 600.0, "seconds one job's run may take before it is "
                      "stopped and recorded as failed (HERMES_CRON_TIMEOUT wins; 0: none)")
CRON_WRAP_RESPONSE = Key("cron.wrap_response", FLAG, _flag, True, "a delivered answer is framed with the job's name "
                         "and id, as Hermes sends it")
CRON_MAX_PARALLEL = Key("cron.max_parallel", COUNT, _count, 0, "jobs one pass of the scheduler runs at once at "
                        "most; the other due jobs wait for the next pass (or another host's); 0: every due job")
CRON_OUTPUT_RETENTION = Key("cron.output_retention", POSITIVE, _positive, 50, "output files kept per job")

# -- skills (`$HERMES_HOME/skills/`, the plugins' skills; Hermes' keys) ---------------------------


def _skill_names(value: Any) -> list[str]:
    """Hermes' forms of a list of skill names: a list, a string holding a list (`'["a", "b"]'`), or one name."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            return [part.strip().strip("'\"") for part in text[1:-1].split(",") if part.strip().strip("'\"")]
        return [text] if text else []
    return _names(value)


SKILLS_DISABLED: Key[list[str]] = Key("skills.disabled", NAMES, _skill_names, [],
                                      "skills the agent is not offered, on any platform (a plugin's as <plugin>:<name>)")
SKILLS_PLATFORM_DISABLED = Key("skills.platform_disabled", MAPPING, _mapping, _EMPTY,
                               "skills not offered on one platform, as skills.platform_disabled.<platform>")
SKILLS_PLATFORM_DISABLED_ON: Key[list[str]] = Key(
    "skills.platform_disabled.*", NAMES, _skill_names, [],
    "skills the agent is not offered on this platform (cli, cron, telegram, api_server, acp, ...), besides "
    "skills.disabled")
SKILLS_EXTERNAL_DIRS: Key[list[str]] = Key("skills.external_dirs", NAMES, _skill_names, [],
                                           "more skill folders, searched after $HERMES_HOME/skills (~ and ${VAR} "
                                           "expanded; relative to $HERMES_HOME)")

# -- memory (the slot's own key, memory.provider, is declared with the slot) -------------------------

MEMORY_PER_CALLER = Key("memory.per_caller", FLAG, _flag, True,
                        "each caller of a server or the gateway has their own memories (false: all share the "
                        "home's, as the CLI does: a server or gateway of one person)")

KEYS: tuple[Key[Any], ...] = (
    PLUGINS_ENABLED, PLUGINS_DISABLED, HOOK_CALLBACK_TIMEOUT, TOOLS_TIMEOUT, TOOL_TIMEOUT, COMMANDS_TIMEOUT,
    PLUGINS_LAZY, PLUGINS_INSTALL_POLICY, PLUGINS_GUARDDOG, PLUGINS_VULNERABILITY_SERVICE, PLUGIN_ENTRIES, PLUGIN_SETTINGS, PLUGIN_LAZY, PLUGIN_ISOLATION, PLUGIN_MEMORY_MB, PLUGIN_PYTHON,
    PLUGIN_ALLOW_TOOL_OVERRIDE, PLUGIN_GRANTED_CAPABILITIES, PLUGIN_CAPABILITIES_CONSENT, PLUGIN_LLM, LLM_ALLOW_PROVIDER_OVERRIDE, LLM_ALLOWED_PROVIDERS,
    LLM_ALLOW_MODEL_OVERRIDE, LLM_ALLOWED_MODELS, LLM_ALLOW_AGENT_ID_OVERRIDE, LLM_ALLOW_PROFILE_OVERRIDE,
    *MODEL_ROUTE, MODEL_FALLBACK, MODEL_PRICING, MODEL_CONTEXT_LENGTH, MODEL_TIMEOUT,
    MODEL_TOOL_CHOICE, MODEL_NULL_TOOL_CALL_CONTENT, MODEL_STREAM,
    AUXILIARY_TIMEOUT, AUXILIARY_TASK_TIMEOUT, *AUXILIARY_ROUTE, RETRY_AFTER_CAP,
    AGENT_MODEL, *AGENT_ROUTE, AGENT_FALLBACK, AGENT_PRICING,
    AGENT_MAX_ITERATIONS, AGENT_SYSTEM_PROMPT, AGENT_TOOL_CHOICE,
    *PROMPT_FILES.values(), CONTEXT_FILE_MAX_CHARS, MEMORY_ENABLED, MEMORY_USER_PROFILE_ENABLED,
    COMPRESSION_THRESHOLD, COMPRESSION_TARGET_RATIO, COMPRESSION_PROTECT_FIRST_N, COMPRESSION_PROTECT_LAST_N,
    LCM_THRESHOLD, LCM_PROTECT_FIRST_N, LCM_PROTECT_LAST_N, LCM_FAN_IN,
    *PLUGIN_LLM_BUDGET, *PLUGINS_LLM_BUDGET, *MODEL_BUDGET, *CALLER_BUDGET, *FLEET_BUDGET,
    BUDGETS_RESERVATION_TTL, BUDGETS_ON_STORE_ERROR, BUDGETS_UNPRICED_COST,
    ACP_AGENTS, ACP_AGENT, ACP_AGENT_COMMAND, ACP_AGENT_ARGS, ACP_AGENT_ENV, ACP_AGENT_CWD, ACP_AGENT_DESCRIPTION,
    ACP_AGENT_TIMEOUT, ACP_AGENT_ENABLED, ACP_END_GRACE,
    PLUGIN_MCP_ALLOWLIST, MCP_SERVERS, MCP_SERVER, MCP_COMMAND, MCP_ARGS, MCP_ENV, MCP_CWD, MCP_URL, MCP_HEADERS,
    MCP_TRANSPORT, MCP_ENABLED, MCP_TIMEOUT, MCP_CONNECT_TIMEOUT, MCP_AUTH, MCP_OAUTH, MCP_OAUTH_SCOPE,
    MCP_SAMPLING, MCP_SAMPLING_ENABLED, MCP_SAMPLING_MAX_TOKENS, MCP_OAUTH_CLIENT_ID, MCP_OAUTH_CLIENT_SECRET,
    MCP_OAUTH_CLIENT_NAME, MCP_OAUTH_REDIRECT_PORT, MCP_TOOLS, MCP_INCLUDE, MCP_EXCLUDE,
    PLATFORMS, PLATFORM, GATEWAY_PLATFORMS, GATEWAY_UNAUTHORIZED_DM, GATEWAY_GROUP_SESSIONS, GATEWAY_THREAD_SESSIONS,
    GATEWAY_CONNECT_TIMEOUT, GATEWAY_RECONNECT_DELAY, GATEWAY_RECONNECT_MAX_DELAY, GATEWAY_SHUTDOWN_GRACE,
    PLUGIN_GATEWAY_INJECTION, APPROVALS_TIMEOUT,
    API_SERVER_KEYS, API_SERVER_KEY, API_KEY_ENV, API_KEY_ENDPOINTS, API_KEY_TOOLS, API_KEY_PLUGINS, *API_KEY_BUDGET,
    API_SERVER_MAX_CONCURRENT, API_SERVER_RETENTION_DAYS, API_SERVER_MAX_STORED, API_SERVER_MAX_BODY,
    API_SERVER_PROFILES,
    STATE_URL, STATE_LEASE, STATE_POOL_SIZE, STATE_REDIS_URL,
    HOSTING_ALLOWED_HOSTS, HOSTING_ALLOWED_ORIGINS,
    TIMEZONE, CRON_TICK_INTERVAL, CRON_TIME_LIMIT, CRON_WRAP_RESPONSE, CRON_MAX_PARALLEL, CRON_OUTPUT_RETENTION,
    SKILLS_DISABLED, SKILLS_PLATFORM_DISABLED, SKILLS_PLATFORM_DISABLED_ON, SKILLS_EXTERNAL_DIRS,
    MEMORY_PER_CALLER,
    OBSERVABILITY_OTLP_ENDPOINT, OBSERVABILITY_RECORD_CONTENT, OBSERVABILITY_SLOW_HOOK,
)


# -- keys the table does not know ---------------------------------------------------------------

def _matches(path: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(path) <= len(pattern) and all(p == "*" or p == part for part, p in zip(path, pattern))


def unknown_keys(data: Mapping[str, Any], slot_keys: Iterable[str] = ()) -> list[str]:
    """One line per key of `data` (a parsed config.yaml) that hermes-core does not read, with
    the nearest key it does read. config.yaml is shared with Hermes Agent, so a top-level
    section is named only when it looks like a misspelt one of hermes-core's."""
    import difflib

    patterns = [key.parts for key in KEYS] + [tuple(name.split(".")) for name in slot_keys]
    exact = {key.parts: key for key in KEYS}
    lines: list[str] = []

    def siblings(here: tuple[str, ...]) -> list[str]:
        depth = len(here) - 1
        return sorted({p[depth] for p in patterns if len(p) > depth and p[depth] != "*"
                       and _matches(here[:depth], p[:depth])})

    def visit(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        for child, value in node.items():
            here = (*path, str(child))
            known = [p for p in patterns if _matches(here, p)]
            if not known:
                near = difflib.get_close_matches(here[-1], siblings(here), n=1, cutoff=0.6)
                if path or (near and difflib.get_close_matches(here[-1], near, n=1, cutoff=0.75)):
                    hint = f" (did you mean {'.'.join((*path, near[0]))}?)" if near else ""
                    lines.append(f"config.yaml: unknown key {'.'.join(here)}{hint}; hermes-core ignores it")
                continue
            whole = next((exact[p] for p in known if len(p) == len(here) and p in exact), None)
            if whole is not None and (whole.free or not isinstance(value, Mapping)):
                continue
            if isinstance(value, Mapping):
                visit(value, here)

    visit(data, ())
    return lines
