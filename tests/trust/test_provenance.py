"""PEP 740 provenance at `hermes plugins install`, offline: an index on loopback serves real
distributions with the provenance PyPI served for them (tests/trust/provenance/), verified with
pypi-attestations against sigstore's own trust root; the publisher is pinned in plugins.lock, and
a later version from another publisher, or without the attestation, is refused unless accepted."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.trust.conftest import Hermes, from_index, site_packages
from tests.trust.index import Index
from tests.trust.wheels import write_wheel

RECORDED = Path(__file__).parent / "provenance"
NAME = "circleci-sign-publish-example"
WHEEL = RECORDED / "circleci_sign_publish_example-0.0.1.dev137-py3-none-any.whl"
CIRCLECI = "CircleCI github.com/CircleCI-Public/sign-and-publish-examples (refs/heads/pypi)"


def later(tmp_path: Path, version: str) -> Path:
    """Another release of the same project, built here: the index has no provenance of it."""
    return write_wheel(tmp_path / "later", NAME, {"circleci_sign_publish_example/__init__.py": "X = 2\n"},
                       version=version, entry_points={})


def installed_version(python: Path) -> list[str]:
    return sorted(p.name for p in site_packages(python).glob("circleci_sign_publish_example-*.dist-info"))


def test_a_verified_provenance_is_shown_pinned_and_a_later_version_without_it_refused_unless_accepted(
        home: Path, hermes_env: Hermes, index: Index, python: Path, tmp_path: Path) -> None:
    index.add(WHEEL, NAME, (RECORDED / f"{WHEEL.name}.provenance").read_bytes())
    first = hermes_env("plugins", "install", "--yes", NAME, **from_index(index))
    assert f"  {NAME} 0.0.1.dev137: provenance verified: published by {CIRCLECI}" in first.stderr.splitlines()
    lock = (home / "plugins.lock").read_text()
    assert ('[[packages.attestation-identities]]\nkind = "CircleCI"\n'
            'project_id = "fdd9283f-e619-46af-8f9c-851f7d3e8b2b"\n') in lock
    assert 'vcs_origin = "github.com/CircleCI-Public/sign-and-publish-examples"' in lock

    index.add(later(tmp_path, "0.0.1.dev138"), NAME)  # served with `provenance: null`
    refused = hermes_env("plugins", "install", "--yes", "--upgrade", NAME, **from_index(index), check=1)
    assert (f"  refused: {NAME} 0.0.1.dev138: no provenance published, but 0.0.1.dev137 (plugins.lock) was "
            f"published by {CIRCLECI}") in refused.stderr.splitlines()
    assert refused.stderr.splitlines()[-1] == (
        f"hermes: error: refused to install {NAME}: the provenance above is not what plugins.lock pins, or does "
        f"not verify; nothing was installed. If you trust it, install again with --accept-publisher {NAME}")
    assert installed_version(python) == [f"circleci_sign_publish_example-0.0.1.dev137.dist-info"]

    accepted = hermes_env("plugins", "install", "--yes", "--upgrade", "--accept-publisher", NAME, NAME,
                          **from_index(index))
    assert f"  accepted by --accept-publisher {NAME}: {NAME} 0.0.1.dev138: no provenance published" in accepted.stderr
    assert installed_version(python) == [f"circleci_sign_publish_example-0.0.1.dev138.dist-info"]
    assert "attestation-identities" not in (home / "plugins.lock").read_text()  # what it has now: none


def test_a_version_from_another_publisher_than_the_locked_one_is_refused_unless_accepted(
        home: Path, hermes_env: Hermes, index: Index, python: Path) -> None:
    index.add(WHEEL, NAME, (RECORDED / f"{WHEEL.name}.provenance").read_bytes())
    # the version locked before was published from a GitHub repository
    (home / "plugins.lock").write_text(
        f'lock-version = "1.0"\ncreated-by = "hermes-core"\n\n[[packages]]\nname = "{NAME}"\n'
        'version = "0.0.1.dev136"\n\n[[packages.attestation-identities]]\nkind = "GitHub"\n'
        'repository = "circleci-example/sign-and-publish"\nworkflow = "release.yml"\n')
    refused = hermes_env("plugins", "install", "--yes", NAME, **from_index(index), check=1)
    assert (f"  refused: {NAME} 0.0.1.dev137 is published by {CIRCLECI}, but 0.0.1.dev136 (plugins.lock) was "
            "published by GitHub circleci-example/sign-and-publish (release.yml)") in refused.stderr.splitlines()
    assert installed_version(python) == []
    hermes_env("plugins", "install", "--yes", "--accept-publisher", NAME, NAME, **from_index(index))
    assert installed_version(python) == [f"circleci_sign_publish_example-0.0.1.dev137.dist-info"]
    assert 'kind = "CircleCI"' in (home / "plugins.lock").read_text()


def test_a_provenance_that_does_not_verify_for_the_file_is_refused(
        home: Path, hermes_env: Hermes, index: Index, python: Path, tmp_path: Path) -> None:
    # another file served with the recorded provenance of the real one
    index.add(later(tmp_path, "0.0.1.dev139"), NAME, (RECORDED / f"{WHEEL.name}.provenance").read_bytes())
    refused = hermes_env("plugins", "install", "--yes", NAME, **from_index(index), check=1)
    assert (f"  refused: {NAME} 0.0.1.dev139: its provenance published and it does NOT verify: Verification "
            "failed: subject does not match distribution") in refused.stderr
    assert installed_version(python) == [] and not (home / "plugins.lock").exists()
    index.add(later(tmp_path, "0.0.1.dev140"), NAME, b'{"version": 1}')  # not a provenance object at all
    broken = hermes_env("plugins", "install", "--yes", f"{NAME}==0.0.1.dev140", **from_index(index), check=1)
    assert (f"  refused: {NAME} 0.0.1.dev140: its provenance published and it does NOT verify: not a PEP 740 "
            "provenance object") in broken.stderr


def test_without_an_index_there_is_no_provenance_and_it_says_so(
        home: Path, hermes_env: Hermes, wheelhouse: Path) -> None:
    shutil.copy(WHEEL, wheelhouse)
    result = hermes_env("plugins", "install", "--yes", NAME)
    assert f"  {NAME} 0.0.1.dev137: no provenance: a local file" in result.stderr.splitlines()
    assert "verified" not in result.stderr


def test_a_private_index_s_credentials_reach_neither_the_lock_nor_the_output(
        home: Path, hermes_env: Hermes, index: Index, python: Path) -> None:
    index.add(WHEEL, NAME, (RECORDED / f"{WHEEL.name}.provenance").read_bytes())
    with_token = {**from_index(index), "PIP_INDEX_URL": index.url.replace("://", "://ann:s3cret-token@", 1)}
    done = hermes_env("plugins", "install", "--yes", NAME, **with_token)
    assert f"  {NAME} 0.0.1.dev137: provenance verified: published by {CIRCLECI}" in done.stderr.splitlines()
    lock = (home / "plugins.lock").read_text()
    assert index.url.split("://", 1)[1] in lock  # the index is recorded, without who logged in to it
    assert "s3cret-token" not in lock + done.stdout + done.stderr and "ann:" not in lock
