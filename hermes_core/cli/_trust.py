"""The checks of `hermes plugins install` and `hermes plugins verify` (docs/trust.md): download,
show what the scan found, ask, install exactly the checked files, and lock them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .._errors import HermesError
from .._paths import hermes_home

__all__ = ["COMMANDS", "TrustError", "checked_install"]


class TrustError(HermesError):
    """The install was refused: by a finding that blocks, by the policy, or by the user."""


def _show(findings: Any, fetched: Any) -> None:
    for item in fetched:
        origin = "built here" if item.source else ("dependency" if not item.requested else "requested")
        click.echo(f"checked {item.name} {item.version}  {item.path.name}  sha256:{item.sha256[:16]}…  ({origin})",
                   err=True)
    shown = [f for f in findings if f.level != "note" or f.rule != "bundled-binary"]
    for finding in shown:
        click.echo(f"  {finding.text()}", err=True)
    if fetched and not [f for f in findings if f.level != "note"]:
        click.echo("  the scan found nothing to ask about (docs/trust.md says what it reads)", err=True)


def _decide(verdict: str, yes: bool, what: str) -> None:
    """Go on, or raise TrustError: blocks always; asks by the prompt, or by plugins.install_policy with --yes."""
    if verdict == "block":
        raise TrustError(f"refused to install {what}: a finding above is one that is never installed "
                         "(docs/trust.md lists them); nothing was installed")
    if yes:
        from .._config.file import load_config
        from ..config_keys import PLUGINS_INSTALL_POLICY

        policy = load_config().read(PLUGINS_INSTALL_POLICY)
        if verdict == "ask" and policy != "caution":
            raise TrustError(f"refused to install {what} with --yes: the findings above ask, and "
                             "plugins.install_policy is safe; answer at a terminal without --yes, or set "
                             "plugins.install_policy: caution")
        return
    question = f"Install {what}?" + (" The findings above ask for your judgement." if verdict == "ask" else "")
    try:
        answer = click.confirm(question, default=False, err=True)
    except click.Abort:
        answer = None
    if not sys.stdin.isatty():  # a piped answer is not echoed: say what was read
        click.echo({True: "y", False: "n", None: "(no answer)"}[answer], err=True)
    if not answer:
        raise TrustError(f"{what} was not installed" + (
            ": no answer (stdin closed); answer at a terminal, or pass --yes, which follows plugins.install_policy"
            if answer is None else ""))


def _guarddog_mode() -> str:
    from .._config.file import load_config
    from ..config_keys import PLUGINS_GUARDDOG

    return load_config().read(PLUGINS_GUARDDOG)


def _vulnerability_service() -> str:
    from .._config.file import load_config
    from ..config_keys import PLUGINS_VULNERABILITY_SERVICE

    return load_config().read(PLUGINS_VULNERABILITY_SERVICE)


def _ask_build(yes: bool) -> Any:
    def check_source(spec: str, where: Path, kind: str) -> bool:
        from .._trust.scan import scan_dist, scan_tree
        from .._trust.findings import verdict

        findings = scan_dist(where, spec, check_name=False) if kind == "sdist" else scan_tree(where, spec)
        click.echo(f"checked the source of {spec} before building it (building runs its setup code)", err=True)
        _show(findings, [])
        if verdict(findings) == "ok":
            click.echo("  the scan found nothing to ask about in the source", err=True)
        else:
            _decide(verdict(findings), yes, f"{spec} (building it runs its setup code)")
        return True

    return check_source


def checked_install(packages: tuple[str, ...], *, python: Path | None, user: bool, upgrade: bool, yes: bool,
                    locked: bool, accept: tuple[str, ...] = ()) -> tuple[list[str], dict[str, list[str]]]:
    """Download, check, show, ask, install exactly the checked files, lock them; the names installed,
    and the capabilities their plugin.yaml files ask for, by package folder."""
    from .._trust.fetch import FetchError

    try:
        return _checked_install(packages, python=python, user=user, upgrade=upgrade, yes=yes, locked=locked,
                                accept=accept)
    except FetchError as exc:
        if exc.output:
            click.echo(exc.output, err=True)
        raise


def _checked_install(packages: tuple[str, ...], *, python: Path | None, user: bool, upgrade: bool, yes: bool,
                     locked: bool, accept: tuple[str, ...]) -> tuple[list[str], dict[str, list[str]]]:
    from .._trust.install import check, check_locked, install_files, lock_entries
    from .._trust.lock import LOCK_FILE, changes, merge, read_lock, write_lock
    from .._trust.names import canonical

    lock_path = hermes_home() / LOCK_FILE
    environment = str(python.parent.parent) if python is not None else None
    guarddog = _guarddog_mode()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hermes-trust-") as folder:
        work = Path(folder)
        if locked:
            pinned = read_lock(lock_path)
            wanted = {canonical(p) for p in packages}
            pinned = [p for p in pinned if not wanted or canonical(p.name) in wanted]
            if not pinned:
                raise TrustError(f"nothing to install from {lock_path}: " + (
                    f"it pins none of {', '.join(packages)}" if packages else "it pins no package"))
            checked = check_locked(pinned, work, python=python, guarddog=guarddog)
        else:
            checked = check(packages, work, python=python, user=user, upgrade=upgrade, check_source=_ask_build(yes),
                            guarddog=guarddog)
        _show(checked.findings, checked.fetched)
        if not locked and lock_path.exists():  # what an update changes against what is locked
            for line in changes(read_lock(lock_path), [(f.name, f.version, f.sha256, f.requested)
                                                       for f in checked.fetched if f.source is None]):
                click.echo(f"  {line}", err=True)
        if not locked:  # and against what is installed: files, dependencies, capabilities
            from .._trust.changes import update_changes

            for item in checked.fetched:
                for line in update_changes(item.name, item.path, environment):
                    click.echo(f"  {line}", err=True)
        provenance = None
        if locked and checked.fetched:
            click.echo("  provenance: not looked up again (--locked installs the files by the sha256 plugins.lock "
                       "pins)", err=True)
        elif checked.fetched:
            from ._provenance import provenance_gate

            provenance, refusal = provenance_gate(checked.fetched, read_lock(lock_path), accept, python)
            if refusal:
                raise TrustError(refusal)
        if checked.fetched:
            checked = _with_vulnerabilities(checked, work)
            requested = [f"{f.name} {f.version}" for f in checked.fetched if f.requested] or ["dependencies"]
            _decide(checked.verdict, yes, ", ".join(requested) + f" ({len(checked.fetched)} file(s))")
            install_files(checked.fetched, work, python=python, user=user, upgrade=upgrade or locked)
            entries = lock_entries(checked.fetched, environment=environment, online=not locked, provenance=provenance)
            write_lock(lock_path, merge(read_lock(lock_path), entries))
        from .._trust.consent import declared_capabilities, llm_users
        from .._consent import LLM_USE

        declared = {folder: ids for f in checked.fetched if f.requested
                    for folder, ids in declared_capabilities(f.path).items()}
        for item in checked.fetched:  # ctx.llm use is shown with the plugin's capabilities
            for package in llm_users(item.path) if item.requested else ():
                declared.setdefault(package, []).append(LLM_USE)
        return [f.name for f in checked.fetched if f.requested], declared


def _with_vulnerabilities(checked: Any, work: Path) -> Any:
    """`checked` with a finding that asks for each known vulnerability pip-audit reports in the
    distributions that came from an index; what it could not check is said to be not checked."""
    import attrs

    from .._trust.vulns import audit_versions

    indexed = [f for f in checked.fetched if f.source is None and f.url and not f.url.startswith("file:")]
    audited = audit_versions([(f.name, f.version) for f in indexed], work, service=_vulnerability_service())
    click.echo(f"  {audited.detail}", err=True)
    others = [f.name for f in checked.fetched if f not in indexed]
    if others and indexed:
        click.echo(f"  known vulnerabilities not checked for {', '.join(others)}: not from an index", err=True)
    for finding in audited.findings:
        click.echo(f"  {finding.text()}", err=True)
    return attrs.evolve(checked, findings=checked.findings + audited.findings)


def verify(as_json: bool) -> int:
    """Check every locked distribution; 0 when all verify, 1 otherwise."""
    from .._trust.lock import LOCK_FILE, read_lock
    from .._trust.verify import problems

    lock_path = hermes_home() / LOCK_FILE
    packages = read_lock(lock_path)
    rows = [{"name": p.name, "version": p.version, "problems": list(problems(p))} for p in packages]
    if as_json:
        import json

        click.echo(json.dumps(rows, indent=2))
    elif not packages:
        click.echo(f"no plugins.lock in {lock_path.parent}: nothing installed by `hermes plugins install` to verify")
    for row in rows if not as_json else []:
        lines = row["problems"]
        click.echo(f"ok {row['name']} {row['version']}" if not lines else "\n".join(f"differs: {line}"
                                                                                     for line in lines))
    bad = sum(bool(r["problems"]) for r in rows)
    if bad and not as_json:
        print(f"hermes: error: {bad} of {len(rows)} locked distribution(s) differ from what was installed; "
              "reinstall with `hermes plugins install --locked`", file=sys.stderr)
    return 1 if bad else 0


def scan(paths: tuple[Path, ...], as_json: bool) -> int:
    """Scan distribution files or source folders without installing anything; 1 when a finding asks or blocks."""
    from .._trust import guarddog
    from .._trust.findings import verdict
    from .._trust.scan import dist_name, scan_dist, scan_tree

    mode = _guarddog_mode()
    rows = []
    for path in paths:
        if path.is_dir():
            findings = scan_tree(path, path.name)
        else:
            findings = scan_dist(path, dist_name(path)) + guarddog.scan(path, dist_name(path), mode)
        rows.append({"path": str(path), "verdict": verdict(findings), "findings": [f.as_dict() for f in findings]})
        if not as_json:
            click.echo(f"{verdict(findings):5}  {path}")
            for finding in findings:
                click.echo(f"  {finding.text()}")
    if as_json:
        import json

        click.echo(json.dumps(rows, indent=2))
    return 1 if any(row["verdict"] != "ok" for row in rows) else 0


def audit(as_json: bool) -> int:
    """Re-run the checks on what plugins.lock says is installed: verify each distribution, and scan
    its files as they are on disk now; 1 when anything differs, or a finding asks or blocks."""
    from .._trust.findings import verdict
    from .._trust.lock import LOCK_FILE, read_lock
    from .._trust.scan import scan_installed
    from .._trust.verify import find_dist, problems

    import tempfile

    from .._trust.names import canonical
    from .._trust.vulns import audit_versions

    lock_path = hermes_home() / LOCK_FILE
    packages = read_lock(lock_path)
    with tempfile.TemporaryDirectory(prefix="hermes-audit-") as folder:
        audited = audit_versions([(p.name, p.version) for p in packages if p.index], Path(folder),
                                 service=_vulnerability_service())
    rows: list[dict[str, Any]] = []
    for package in packages:
        dist = find_dist(package.name, package.environment)
        files = [(str(f), Path(str(f.locate()))) for f in (dist.files or [])] if dist is not None else []
        findings = scan_installed(files, package.name) + [f for f in audited.findings
                                                          if canonical(f.dist) == canonical(package.name)]
        checked_vulns = audited.status == "checked" and package.index
        rows.append({"name": package.name, "version": package.version, "problems": list(problems(package)),
                     "verdict": verdict(findings), "findings": [f.as_dict() for f in findings],
                     "not_checked": ["provenance (PEP 740) again"] + ([] if checked_vulns else
                                                                       ["known vulnerabilities"])})
    if as_json:
        import json

        click.echo(json.dumps(rows, indent=2))
    elif not rows:
        click.echo(f"no plugins.lock in {lock_path.parent}: nothing installed by `hermes plugins install` to audit")
    for row in rows if not as_json else []:
        bad = row["problems"] or row["verdict"] != "ok"
        click.echo(f"{'FAIL' if bad else 'ok'} {row['name']} {row['version']}")
        for line in row["problems"]:
            click.echo(f"  differs: {line}")
        for finding in row["findings"]:
            if finding["level"] != "note":
                where = f"{finding['file']}:{finding['line']}" if finding["line"] else finding["file"]
                click.echo(f"  {finding['level']:5}  {where}  {finding['rule']}: {finding['why']}")
    if rows and not as_json:
        click.echo(audited.detail)
        click.echo("not checked again: provenance (PEP 740; verified at install, its publisher pinned in plugins.lock)")
    return 1 if any(row["problems"] or row["verdict"] != "ok" for row in rows) else 0


@click.command("verify")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list: name, version, problems.")
@click.pass_context
def verify_command(ctx: click.Context, as_json: bool) -> None:
    """Check the installed files of every distribution in $HERMES_HOME/plugins.lock against their
    RECORD, and each RECORD against the lock; name every file that differs (exit 1)."""
    ctx.exit(verify(as_json))


@click.command("audit")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list: name, version, problems, findings.")
@click.pass_context
def audit_command(ctx: click.Context, as_json: bool) -> None:
    """Re-run the checks on what is installed, for a cron job or CI: `verify`, and the scan of each
    locked distribution's files as they are on disk now (exit 1 when anything differs or asks)."""
    ctx.exit(audit(as_json))


@click.command("scan")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list: path, verdict, findings.")
@click.pass_context
def scan_command(ctx: click.Context, paths: tuple[Path, ...], as_json: bool) -> None:
    """Scan wheels, sdists or source folders as `install` does, installing nothing: each finding
    with its file, line and why (exit 1 when one asks or blocks; docs/trust.md)."""
    ctx.exit(scan(paths, as_json))


COMMANDS = (verify_command, audit_command, scan_command)
