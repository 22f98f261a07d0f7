"""An OAuth-protected MCP server for the tests, built from the official SDK's own pieces and run as a
subprocess: `python oauth_server.py URLFILE [--ttl SECONDS] [--sse] [--client ID:SECRET:REDIRECT_URI] [--no-scope]`.

Two apps on 127.0.0.1 (free ports): an authorization server (`create_auth_routes` over an in-memory
provider: discovery, dynamic registration, PKCE authorization codes, refresh, revocation; its
/authorize approves at once with a 302 to the redirect URI) and the MCP server (Streamable HTTP at
/mcp, bearer-checked against that provider by `ProviderTokenVerifier`; one tool, `whoami`; with
`--sse`, the high-level `MCPServer` over the older SSE transport at /sse instead). Access
tokens live `--ttl` seconds (3600 unless given). With `--client`, that client is registered
beforehand (its secret sent with HTTP Basic) and dynamic registration is off. With `--no-scope`, the
tokens it issues never carry the scope the MCP server requires (which answers 403 insufficient_scope). URLFILE gets a JSON object once both listen:
`{"mcp": <MCP url>, "issuer": <AS url>}`. GET <issuer>/counts answers what the AS did so far
(register, authorize, code_exchange, refresh_exchange); POST <issuer>/revoke-all forgets every token.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import sys
import time

import mcp.types as types
import uvicorn
from mcp.server.auth.provider import (
    AccessToken, AuthorizationCode, AuthorizationParams, ProviderTokenVerifier, RefreshToken, TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.lowlevel import Server
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl  # AnyUrl: what the SDK compares redirect URIs with
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SCOPE = "mcp:tools"


class Provider:
    """Everything in dicts; `authorize` approves at once (a test has no person to ask)."""

    def __init__(self, issuer: str, ttl: int, no_scope: bool = False) -> None:
        self.issuer, self.ttl, self.no_scope = issuer, ttl, no_scope
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.counts = {"register": 0, "authorize": 0, "code_exchange": 0, "refresh_exchange": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.counts["register"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.counts["authorize"] += 1
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject="test-user")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=self.issuer)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        scopes = [] if self.no_scope else scopes
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.ttl, resource=resource,
                                          subject="test-user")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=self.ttl, scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          code: AuthorizationCode) -> OAuthToken:
        self.counts["code_exchange"] += 1
        if self.codes.pop(code.code, None) is None:
            raise TokenError("invalid_grant", "code already used")
        return self._issue(client.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, token: str) -> RefreshToken | None:
        return self.refresh.get(token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.counts["refresh_exchange"] += 1
        self.refresh.pop(token.token, None)  # rotated
        return self._issue(client.client_id, scopes or token.scopes, token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def build(provider: Provider, issuer: AnyHttpUrl, mcp_url: str, sse: bool,
          registration: bool = True) -> tuple[Starlette, Starlette]:
    async def counts(request: Request) -> JSONResponse:
        return JSONResponse(provider.counts)

    async def revoke_all(request: Request) -> JSONResponse:
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({})

    routes = create_auth_routes(
        provider, issuer,
        client_registration_options=ClientRegistrationOptions(enabled=registration, valid_scopes=[SCOPE],
                                                              default_scopes=[SCOPE]),
        revocation_options=RevocationOptions(enabled=True))
    auth_server = Starlette(routes=[*routes, Route("/counts", counts), Route("/revoke-all", revoke_all,
                                                                            methods=["POST"])])

    async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name="whoami", description="Who the token is for.", input_schema={"type": "object"})])

    async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        text = f"subject={token.subject if token else None} scopes={' '.join(token.scopes) if token else ''}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    settings = AuthSettings(issuer_url=issuer, resource_server_url=AnyHttpUrl(mcp_url), required_scopes=[SCOPE],
                            validate_token_resource=True)
    if sse:
        from mcp.server.mcpserver import MCPServer

        high = MCPServer("oauth-test-server", token_verifier=ProviderTokenVerifier(provider), auth=settings)

        @high.tool(description="Who the token is for.")
        def whoami() -> str:
            from mcp.server.auth.middleware.auth_context import get_access_token

            token = get_access_token()
            return f"subject={token.subject if token else None} scopes={' '.join(token.scopes) if token else ''}"

        return auth_server, high.sse_app()
    server = Server("oauth-test-server", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(host="127.0.0.1", token_verifier=ProviderTokenVerifier(provider), auth=settings)
    return auth_server, app


async def main(url_file: str, ttl: int, sse: bool, client: str | None = None, no_scope: bool = False) -> None:
    as_sock, rs_sock = listening(), listening()
    issuer = AnyHttpUrl(f"http://127.0.0.1:{as_sock.getsockname()[1]}")
    mcp_url = f"http://127.0.0.1:{rs_sock.getsockname()[1]}/{'sse' if sse else 'mcp'}"
    provider = Provider(str(issuer), ttl, no_scope)  # the issuer exactly as the AS metadata renders it (a trailing /)
    if client is not None:  # registered beforehand, as an operator does with a provider's console
        client_id, secret, redirect = client.split(":", 2)
        provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id, client_secret=secret, redirect_uris=[AnyUrl(redirect)], scope=SCOPE,
            token_endpoint_auth_method="client_secret_basic")
    auth_server, app = build(provider, issuer, mcp_url, sse, registration=client is None)
    servers = [uvicorn.Server(uvicorn.Config(a, log_level="warning", lifespan="on")) for a in (auth_server, app)]
    tasks = [asyncio.create_task(s.serve(sockets=[sock])) for s, sock in zip(servers, (as_sock, rs_sock))]
    while not all(s.started for s in servers):
        await asyncio.sleep(0.01)
    with open(url_file + ".tmp", "w") as out:
        json.dump({"mcp": mcp_url, "issuer": str(issuer).rstrip("/")}, out)
    os.replace(url_file + ".tmp", url_file)
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    ttl = int(sys.argv[sys.argv.index("--ttl") + 1]) if "--ttl" in sys.argv else 3600
    asyncio.run(main(sys.argv[1], ttl, "--sse" in sys.argv,
                     sys.argv[sys.argv.index("--client") + 1] if "--client" in sys.argv else None, "--no-scope" in sys.argv))
