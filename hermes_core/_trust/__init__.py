"""Trust at install (docs/trust.md): what `hermes plugins install|verify` check before and after
anything is installed.

- `install`: check (download, scan; nothing installed), install exactly the checked files, the lock's entries
- `fetch`: pip's dry run and download into a temporary folder; sdists, folders and git URLs built after their scan
- `scan`, `rules`, `names`: the scan of the downloaded files (our rules, read with `ast`), typo-squatted names
- `guarddog`: GuardDog, when installed, run in a process of its own
- `provenance`: PEP 740 attestations looked up on the index and verified (pypi-attestations), their publisher
- `vulns`: known vulnerabilities by pip-audit --strict, or "not checked"
- `consent`: the capabilities a plugin.yaml asks for, the hash of a set of them, `ctx.llm` use
- `changes`: what an update changes against what is installed (files, dependencies, capabilities)
- `lock`: `$HERMES_HOME/plugins.lock` (PEP 751 pylock.toml)
- `verify`: installed files against their RECORD, and RECORD against the lock
- `findings`: `Finding` and the verdict
"""
