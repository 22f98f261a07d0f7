"""PEP 740 provenance: where the index serves an attestation of a downloaded file, it is verified
with `pypi-attestations` (the `provenance` extra) against the Sigstore trust root sigstore ships
(no network), and the publisher it names (a GitHub repository and workflow, a GitLab project, ...)
is what plugins.lock pins. Where none is served, that is said, never "verified"."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from .._redact import redact_secrets
from .fetch import Fetched, run_pip

__all__ = ["Attested", "ProvenanceError", "attested", "describe", "indexes", "judge", "same_publisher",
           "verify_provenance"]

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
INTEGRITY_JSON = "application/vnd.pypi.integrity.v1+json"


class ProvenanceError(Exception):
    """A provenance object that does not verify for the file it is served for."""


@attrs.frozen
class Attested:
    """What is known of one file's provenance: `verified` (with the publishers), `none` (none
    published), `failed` (served and did not verify) or `unchecked` (why in `detail`)."""

    status: str
    detail: str
    publishers: tuple[Mapping[str, str], ...] = ()
    index: str | None = None


def indexes(python: Path | None = None) -> list[str]:
    """The http(s) indexes pip is configured with (index-url, then extra-index-url; none with
    no-index), from `pip config list`, which includes the PIP_* environment."""
    listed = run_pip(["config", "list"], "read its configuration", python).stdout
    config: dict[str, str] = {}
    env: dict[str, str] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        (env if key.startswith(":env:") else config).setdefault(key.rsplit(".", 1)[-1], value.strip().strip("'\""))
    values = config | env  # the environment wins
    if values.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        return []
    found = [values.get("index-url") or "https://pypi.org/simple", *values.get("extra-index-url", "").split()]
    return [url.rstrip("/") for url in found if urlsplit(url).scheme in ("http", "https")]


def without_credentials(url: str) -> str:
    """`url` without a user and password (a private index's token): what a message says and the
    lock records; the requests themselves go to the URL as configured."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _get(url: str, accept: str) -> bytes | None:
    """The body at `url`; None on a 404; OSError on anything else that goes wrong. A user and
    password in `url` (a private index's, as pip takes them) are sent as HTTP basic auth."""
    import base64
    import urllib.error
    import urllib.parse
    import urllib.request

    parts = urlsplit(url)
    request = urllib.request.Request(without_credentials(url), headers={"Accept": accept})
    if parts.username is not None:  # sent to this host only: urllib copies `headers` onto a redirect elsewhere
        login = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_unredirected_header("Authorization", "Basic " + base64.b64encode(login.encode()).decode("ascii"))
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            data: bytes = answer.read()
            return data
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def attested(item: Fetched, where: Sequence[str], unreachable: dict[str, str] | None = None) -> Attested:
    """The provenance of the downloaded `item`, looked up on the indexes `where` (PEP 691's
    `provenance` field, or PyPI's integrity API) and verified. An index that cannot be read is
    added to `unreachable` (with why) and not tried again for the next files."""
    from .names import canonical

    if item.source is not None or item.url is None or item.url.startswith("file:"):
        return Attested("none", "no provenance: " + ("built here" if item.source else "a local file"))
    failed = unreachable if unreachable is not None else {}
    for index in where:
        try:
            if index in failed:
                raise OSError(failed[index])
            page = _get(f"{index}/{canonical(item.name)}/", SIMPLE_JSON)
            files = json.loads(page).get("files", []) if page else []
        except (OSError, ValueError) as exc:
            failed[index] = str(exc)
            return Attested("unchecked", f"provenance not checked: {without_credentials(index)} could not be read "
                                         f"({redact_secrets(str(exc))})")
        entry = next((f for f in files if isinstance(f, dict) and f.get("filename") == item.path.name), None)
        if entry is None:
            continue
        url = entry.get("provenance")
        if "provenance" not in entry and urlsplit(index).hostname == "pypi.org":
            url = f"https://pypi.org/integrity/{canonical(item.name)}/{item.version}/{item.path.name}/provenance"
        if not url:
            return Attested("none", "no provenance published", index=without_credentials(index))
        try:
            raw = _get(url, INTEGRITY_JSON)
        except OSError as exc:
            return Attested("unchecked", f"provenance not checked: {without_credentials(url)} could not be read "
                                         f"({redact_secrets(str(exc))})", index=without_credentials(index))
        if raw is None:
            return Attested("none", "no provenance published", index=without_credentials(index))
        return _verified(item, raw, without_credentials(index))
    return Attested("none", "no provenance published (no index that lists the file serves it)")


def _verified(item: Fetched, raw: bytes, index: str) -> Attested:
    try:
        publishers = verify_provenance(raw, item.path.name, item.sha256)
    except ModuleNotFoundError:
        return Attested("unchecked", "provenance published, not verified: verifying needs "
                        "pip install 'hermes-core[provenance]'", index=index)
    except ProvenanceError as exc:
        return Attested("failed", f"provenance published and it does NOT verify: {exc}", index=index)
    return Attested("verified", "provenance verified: published by " + "; ".join(map(describe, publishers)),
                    publishers, index)


def verify_provenance(raw: bytes, filename: str, sha256: str) -> tuple[dict[str, str], ...]:
    """The publishers of the PEP 740 provenance `raw`, every attestation of which verifies for the
    file `filename` of `sha256` (offline, against sigstore's own trust root); ProvenanceError if not."""
    import logging

    import pydantic
    from pypi_attestations import AttestationError, Distribution, Provenance

    logging.getLogger("sigstore").setLevel(logging.ERROR)  # "loaded in offline mode" is what is asked for

    try:
        provenance = Provenance.model_validate_json(raw)
    except pydantic.ValidationError as exc:
        raise ProvenanceError(f"not a PEP 740 provenance object ({exc.error_count()} error(s))") from None
    if not provenance.attestation_bundles:
        raise ProvenanceError("it holds no attestation")
    dist = Distribution(name=filename, digest=sha256)
    publishers = []
    for bundle in provenance.attestation_bundles:
        for attestation in bundle.attestations:
            try:
                attestation.verify(bundle.publisher, dist, offline=True)
            except AttestationError as exc:
                raise ProvenanceError(str(exc)) from None
        publishers.append({k: str(v) for k, v in bundle.publisher.model_dump(exclude_none=True).items()})
    return tuple(publishers)


def describe(publisher: Mapping[str, str]) -> str:
    """`GitHub trailofbits/pypi-attestations (release.yml)`: a publisher in a few words."""
    rest = {k: v for k, v in publisher.items() if k != "kind"}
    main = rest.get("repository") or rest.get("vcs_origin") or rest.get("project") or rest.get("email") or ""
    detail = ", ".join(rest[k] for k in ("workflow", "vcs_ref", "environment") if rest.get(k))
    return f"{publisher.get('kind', '?')} {main}".rstrip() + (f" ({detail})" if detail else "")


def _identity(publisher: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in publisher.items() if k != "environment"))


def same_publisher(a: Sequence[Mapping[str, str]], b: Sequence[Mapping[str, str]]) -> bool:
    """Whether two lists of publishers name the same ones (a GitHub environment aside)."""
    return {_identity(p) for p in a} == {_identity(p) for p in b}


def judge(name: str, version: str, found: Attested, pinned: Sequence[Mapping[str, str]] | None,
          pinned_version: str | None) -> str | None:
    """Why installing `name` `version` with the provenance `found` is refused, given the publishers
    plugins.lock pins for it (from `pinned_version`); None when it is not."""
    if found.status == "failed":
        return f"{name} {version}: its {found.detail}"
    if not pinned:
        return None
    was = f"{pinned_version} (plugins.lock) was published by {'; '.join(map(describe, pinned))}"
    if found.status == "verified" and not same_publisher(found.publishers, pinned):
        return f"{name} {version} is published by {'; '.join(map(describe, found.publishers))}, but {was}"
    if found.status != "verified":
        return f"{name} {version}: {found.detail}, but {was}"
    return None
