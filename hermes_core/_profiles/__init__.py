"""Profiles: several homes under one root, as Hermes has them. The default profile is the root
(`~/.hermes`, or the `HERMES_HOME` a deployment sets); a named profile is `<root>/profiles/<name>/`,
a whole `HERMES_HOME` of its own (config, `.env`, memory, sessions, skills, cron, gateway).

The modules, by what they serve (this package imports none of them, so that choosing a profile
at start-up costs two small modules):

- `names`: the name rule, the root a home belongs to, which profile a home is (`profile_of`);
- `select`: which profile a command line runs as (`-p NAME`, a `HERMES_HOME` inside `profiles/`,
  the sticky `<root>/active_profile`), chosen once when `hermes` starts;
- `manage`: create (and clone), list, use, rename and delete;
- `archive`: export and import, secrets left out of the archive;
- `aliases`: the command aliases (`~/.local/bin/<alias>` running `hermes -p <name>`), when asked for.
"""
