"""Plugin sources in the pattern of published Hermes plugins, used by more than one test module."""

from __future__ import annotations

# hermes-local-memory's shim: a memory provider class that derives from nothing of Hermes'.
SHIM = """
class LocalMemoryProvider:
    name = "local"
    def is_available(self): return True
    def initialize(self, session_id, **kwargs): self.session_id = session_id
    def get_tool_schemas(self): return []

def register(ctx):
    ctx.register_memory_provider(LocalMemoryProvider())
"""
