"""Fixture for the official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16),
server scenarios, written with hermes-core's plugin API only.

Implemented (what `hermes mcp serve` can express with a plugin):
  tools    test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
           test_multiple_content_types, test_tool_with_logging, test_tool_with_progress,
           test_error_handling, json_schema_2020_12_tool
  prompts  test_simple_prompt, test_prompt_with_arguments   (slash commands, served with --prompts)

Deliberately NOT implemented (not expressible with the plugin API; no fakes):
  test_sampling, test_elicitation, test_elicitation_sep1034_defaults,
  test_elicitation_sep1330_enums     -- need server-to-client requests (sampling/elicitation)
  test_reconnection                  -- needs the tool to close its own SSE stream mid-call
  test_prompt_with_embedded_resource, test_prompt_with_image
                                     -- a prompt is one user *text* message (the command's answer)
  test://static-text, test://static-binary, test://template/{id}/data, subscriptions
                                     -- plugins cannot define resources (--resources serves sessions)
"""

from __future__ import annotations

import logging
import shlex
import time

log = logging.getLogger("hermes.plugins.conformance.fixture")

# 1x1 red pixel PNG, and a 10 ms silent 8 kHz mono 16-bit WAV
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
WAV_B64 = ("UklGRsQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YaAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
           "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
           "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
           "AAAAAAAA")

NO_ARGS = {"type": "object", "properties": {}}


def _schema(name: str, description: str, parameters: dict | None = None) -> dict:
    return {"name": name, "description": description, "parameters": parameters or dict(NO_ARGS)}


def register(ctx):
    tool = lambda name, description, handler, parameters=None: ctx.register_tool(  # noqa: E731
        name, "conformance", _schema(name, description, parameters), handler)

    # tools-call-simple-text
    tool("test_simple_text", "Returns simple text content",
         lambda args, **kw: "This is a simple text response for testing.")

    # tools-call-image
    tool("test_image_content", "Returns image content (1x1 red PNG)",
         lambda args, **kw: {"_multimodal": True, "content": [
             {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_B64}}]})

    # tools-call-audio
    tool("test_audio_content", "Returns audio content (WAV)",
         lambda args, **kw: {"_multimodal": True, "content": [
             {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}}]})

    # tools-call-embedded-resource
    tool("test_embedded_resource", "Returns an embedded resource",
         lambda args, **kw: {"_multimodal": True, "content": [
             {"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                                               "text": "This is an embedded resource content."}}]})

    # tools-call-mixed-content
    tool("test_multiple_content_types", "Returns text, image and embedded resource content",
         lambda args, **kw: {"_multimodal": True, "content": [
             {"type": "text", "text": "Multiple content types test:"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_B64}},
             {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                                               "text": '{"test":"data","value":123}'}}]})

    # tools-call-with-logging: three info records, ~50 ms apart (sent as notifications/message)
    def with_logging(args, **kw):
        log.info("Tool execution started")
        time.sleep(0.05)
        log.info("Tool processing data")
        time.sleep(0.05)
        log.info("Tool execution completed")
        return "Tool with logging executed successfully"

    tool("test_tool_with_logging", "Sends three info log notifications while it runs", with_logging)

    # tools-call-with-progress: 0/100, 50/100, 100/100, ~50 ms apart
    def with_progress(args, **kw):
        ctx.report_progress(0, 100, "started")
        time.sleep(0.05)
        ctx.report_progress(50, 100, "half way")
        time.sleep(0.05)
        ctx.report_progress(100, 100, "done")
        return "Tool with progress executed successfully"

    tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", with_progress)

    # tools-call-error: always raises -> isError result
    def error_handling(args, **kw):
        raise RuntimeError("This tool intentionally returns an error for testing")

    tool("test_error_handling", "Always fails", error_handling)

    # json-schema-2020-12 (pending suite): keywords must survive in tools/list
    tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
         lambda args, **kw: "ok",
         {"$schema": "https://json-schema.org/draft/2020-12/schema",
          "type": "object",
          "$defs": {"address": {"type": "object",
                                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
          "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
          "additionalProperties": False})

    # prompts (served with --prompts): slash commands, answer = one user text message
    ctx.register_command("test_simple_prompt", lambda raw: "This is a simple prompt for testing.",
                         description="A simple prompt without arguments", argument_mode="none")
    ctx.register_command("test_prompt_with_arguments",
                         lambda raw: "Prompt with arguments: arg1='{}', arg2='{}'".format(*(shlex.split(raw) + ["", ""])[:2]),
                         description="A prompt with two required arguments", args_hint="<arg1> <arg2>",
                         argument_mode="required")
