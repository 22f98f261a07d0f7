"""The servers the fleet tests run against, started by the tests: one PostgreSQL cluster per session
(per xdist worker) with a fresh database per test, nginx in front of the hosts a test starts, and a
redis-server per test that asks for one.
Under CI=true a server that is not installed fails the test; elsewhere the test is skipped."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack

import pytest

from tests.helpers.nginx import running_nginx
from tests.helpers.postgres import ClusterError, PgCluster
from tests.helpers.redis import RedisServer


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's PostgreSQL cluster: `url_for(dbname)`, `create_database()`, `drop_database(name)`,
    `stop()`, `start()`, `restart()`, `port`, `user`, `password`. A test that stops it need not start it
    again: the next `pg_url` does."""
    try:
        cluster = PgCluster.create()
    except ClusterError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield cluster
    cluster.close()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """`postgresql://hermes:PASSWORD@127.0.0.1:PORT/t_<uuid>`: a fresh empty database of this test's
    own, dropped after it (its sessions still open are ended)."""
    url = pg_cluster.create_database()
    yield url
    pg_cluster.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture
def nginx() -> Iterator[Callable[[Sequence[str | int]], str]]:
    """Start nginx in front of hosts: `nginx(["127.0.0.1:PORT", ...])` (or ports) returns its base URL
    `http://127.0.0.1:PORT`; every nginx started is stopped after the test."""
    with ExitStack() as stack:
        yield lambda upstreams: stack.enter_context(running_nginx(upstreams))


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of this test's own, empty, on a free port: `url`, `stop()`, `start()`, `restart()`
    (empty again: it keeps nothing on disk), `port`."""
    server = RedisServer.create()
    yield server
    server.close()
