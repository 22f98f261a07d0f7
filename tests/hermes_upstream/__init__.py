"""Hermes Agent's own plugin-surface tests, ported to run against hermes-core.

Each module names, in its header, the upstream file and the commit it was read at
(repository NousResearch/hermes-agent). The tests import the Hermes names as a plugin does
(`from tools.registry import ...`), which hermes-core serves where no Hermes Agent is
installed; their assertions are upstream's, unedited. A test that needs a Hermes module
hermes-core does not serve, or reads a Hermes private that hermes-core has no reason to have,
is kept and skipped with the reason.
"""
