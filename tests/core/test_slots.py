"""Slots: one generic single-select mechanism, selected only by config."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hermes_core import (
    Config,
    PluginManager,
    ProviderConflictError,
    ProviderCopyError,
    RegistrationError,
    SlotDecl,
    SlotRegistry,
    UnknownProviderError,
)
from hermes_core.providers import TTSProvider
from tests.helpers import make_folder_plugin, write_config
from tests.helpers.slot_classes import Engine, Lossless


class Voice(TTSProvider):
    name = "piper"

    def synthesize(self, text, output_path, **kwargs):
        return output_path


class PropertyNamed(Engine):
    @property
    def name(self):
        return "by-property"


def test_both_builtin_slots_are_declared() -> None:
    decls = {d.name: d for d in SlotRegistry().declared}
    assert (decls["context_engine"].config_key, decls["context_engine"].default) == ("context.engine", "compressor")
    assert (decls["memory"].config_key, decls["memory"].default) == ("memory.provider", "builtin")
    assert decls["tts"].config_key == "tts.provider"


def test_a_provider_is_active_only_when_config_selects_it() -> None:
    slots = SlotRegistry()
    slots.add("context_engine", Lossless, "context_engine/lcm")
    assert slots.select("context_engine", Config({})) is None  # default 'compressor' not provided: inactive
    chosen = slots.select("context_engine", Config({"context": {"engine": "lcm"}}))
    assert (chosen.name, chosen.plugin_id, chosen.style) == ("lcm", "context_engine/lcm", "class")


def test_unknown_configured_name_is_a_loud_error_listing_what_exists() -> None:
    slots = SlotRegistry()
    slots.add("tts", Voice, "a", name="piper")
    slots.add("tts", Voice, "b", name="espeak")
    with pytest.raises(UnknownProviderError) as info:
        slots.select("tts", Config({"tts": {"provider": "say"}}))
    message = str(info.value)
    assert "tts.provider is 'say'" in message and "'tts'" in message
    assert "available: 'espeak', 'piper'" in message


def test_duplicate_name_is_rejected_naming_both_plugins_first_stays(home: Path, caplog) -> None:
    slots = SlotRegistry()
    slots.add("context_engine", Lossless, "first")
    with pytest.raises(ProviderConflictError) as info:
        slots.add("context_engine", Lossless(), "second")
    assert "plugin 'second'" in str(info.value) and "plugin 'first'" in str(info.value)
    assert slots.select("context_engine", Config({"context": {"engine": "lcm"}})).plugin_id == "first"
    manager = PluginManager()  # through plugins: a warning and a doctor problem, not a failed plugin
    manager.add_plugin(lambda ctx: ctx.register_context_engine(Lossless), "first")
    assert manager.add_plugin(lambda ctx: ctx.register_context_engine(Lossless), "second").status == "ok"
    assert "plugin 'second'" in caplog.text and "plugin 'first'" in caplog.text
    assert any("rejected" in p and "plugin 'first'" in p for p in manager.doctor().problems)


def test_class_provider_is_instantiated_per_session() -> None:
    slots = SlotRegistry()
    slots.add("context_engine", Lossless, "p")
    config = Config({"context": {"engine": "lcm"}})
    one, two = slots.create("context_engine", config), slots.create("context_engine", config)
    assert isinstance(one, Lossless) and one is not two


def test_instance_provider_is_deep_copied_per_session() -> None:
    slots = SlotRegistry()
    original = Lossless()
    original.turns.append("shared?")
    slots.add("context_engine", original, "p")
    config = Config({"context": {"engine": "lcm"}})
    copy = slots.create("context_engine", config)
    copy.turns.append("mine")
    assert copy is not original and original.turns == ["shared?"]


def test_uncopyable_instance_is_lent_to_one_session_at_a_time() -> None:
    """Hermes uses the one instance a plugin registers; an instance holding a lock cannot be
    copied per session, so it is lent to one session and back, and a second session meanwhile
    is refused naming the fixes."""
    holder = Lossless()
    holder.lock = threading.Lock()
    slots = SlotRegistry()
    slots.add("context_engine", holder, "locky")
    config = Config({"context": {"engine": "lcm"}})
    first = slots.create("context_engine", config)
    assert first is holder
    with pytest.raises(ProviderCopyError) as info:
        slots.create("context_engine", config)
    message = str(info.value)
    assert "another open session is using it" in message and "plugin 'locky'" in message
    assert "__deepcopy__" in message and "register its class" in message
    (entry,) = [p for p in slots.providers("context_engine") if p.name == "lcm"]
    entry.release(first)
    assert slots.create("context_engine", config) is holder


def test_factory_provider_with_explicit_name() -> None:
    slots = SlotRegistry()
    slots.add("tts", lambda: "a voice", "p", name="espeak")
    assert slots.create("tts", Config({"tts": {"provider": "espeak"}})) == "a voice"
    with pytest.raises(RegistrationError, match="without a name"):
        slots.add("tts", lambda: "x", "p")


def test_host_declared_slot_with_a_base_class() -> None:
    slots = SlotRegistry()
    slots.declare(SlotDecl("sandbox", "sandbox.provider", base=Engine))
    slots.add("sandbox", PropertyNamed, "p")  # name read from a property
    assert slots.names("sandbox") == ["by-property"]
    with pytest.raises(RegistrationError, match="not a Engine"):
        slots.add("sandbox", Lossless, "q")


def test_memory_slot_takes_only_memory_providers() -> None:
    with pytest.raises(RegistrationError, match="not a MemoryProvider"):
        SlotRegistry().add("memory", Lossless, "q")


def test_manager_wires_plugins_into_slots(home: Path) -> None:
    make_folder_plugin(home / "plugins" / "context_engine", "lcm", """
from tests.helpers.slot_classes import Lossless as Lcm
def register(ctx):
    ctx.register_context_engine(Lcm)
""", "description: lossless\n")
    make_folder_plugin(home / "plugins", "mem", """
from hermes_core import MemoryProvider, hookimpl
class Vec(MemoryProvider):
    name = "vectors"
    def is_available(self): return True
    def initialize(self, session_id, **kwargs): pass
    def get_tool_schemas(self): return []
@hookimpl
def register_memory_provider(ctx):
    return Vec()
""")
    write_config(home, "context:\n  engine: lcm\nmemory:\n  provider: vectors\nplugins:\n  enabled: [mem]\n")
    manager = PluginManager()
    assert manager.select("context_engine").plugin_id == "context_engine/lcm"  # no `enabled` entry needed
    assert type(manager.create_provider("memory")).__name__ == "Vec"
    assert manager.doctor().slots["context_engine"] == "lcm"


def test_category_plugin_exporting_a_subclass_of_the_slot_base(home: Path) -> None:
    make_folder_plugin(home / "plugins" / "sandbox", "docker", """
from tests.helpers.slot_classes import Engine
class DockerSandbox(Engine):
    name = "docker"
""")
    write_config(home, "sandbox:\n  provider: docker\n")
    manager = PluginManager(slots=[SlotDecl("sandbox", "sandbox.provider", base=Engine)])
    assert manager.select("sandbox").name == "docker"


def test_doctor_reports_an_unknown_configured_engine(home: Path) -> None:
    write_config(home, "context:\n  engine: nonexistent\n")
    report = PluginManager().doctor()
    assert not report.ok
    assert any("context.engine is 'nonexistent'" in p for p in report.problems)


def test_register_context_engine_hook_offers_an_engine(home: Path) -> None:
    make_folder_plugin(home / "plugins", "engines", """
from hermes_core import hookimpl
from tests.helpers.slot_classes import Lossless
class Summariser(Lossless):
    name = "summariser"
@hookimpl
def register_context_engine(ctx):
    return Summariser
""")
    write_config(home, "plugins:\n  enabled: [engines]\n")
    manager = PluginManager()
    assert manager.record("engines").registered == {"providers": ["context_engine:summariser"]}
    assert manager.select("context_engine").name == "compressor"  # never active by itself: the default stays
    write_config(home, "plugins:\n  enabled: [engines]\ncontext:\n  engine: summariser\n")
    assert type(PluginManager().create_provider("context_engine")).__name__ == "Summariser"
