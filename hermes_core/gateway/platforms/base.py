"""`gateway.platforms.base`, as Hermes defines it: `BasePlatformAdapter`, the class a platform
plugin subclasses, and the names adapters import beside it.

An adapter implements `connect(*, is_reconnect=False)`, `disconnect()`, `send(chat_id, content,
reply_to=None, metadata=None)` and `get_chat_info(chat_id)`; for each message it receives it
builds a `MessageEvent` (`source=self.build_source(...)`) and awaits `self.handle_message(event)`,
which returns at once. The base class does the rest: each conversation (Hermes' session key) has
its own queue, so conversations run side by side and each one in order; the answer is split to
the platform's length (`MAX_MESSAGE_LENGTH`, else the registration's `max_message_length`, else
4,096) and sent with retries; an exception in the gateway's handler or in `send` is logged and
answered, never raised into the adapter's receive loop.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from hermes_core.hosting import Backoff

from ..config import Platform, PlatformConfig
from ..session import SessionSource, build_session_key, session_key_for
from .event import (
    SEND_ERROR_KINDS, EphemeralReply, MessageEvent, MessageHandler, MessageType, ProcessingOutcome, SendResult,
    coerce_plaintext_gateway_command,
)
from .media import (
    DEFAULT_INBOUND_MEDIA_MAX_BYTES, SUPPORTED_DOCUMENT_TYPES, SUPPORTED_IMAGE_DOCUMENT_TYPES, SUPPORTED_VIDEO_TYPES,
    CachedMedia, cache_audio_from_bytes, cache_media_bytes,
    cache_audio_from_url, cache_document_from_bytes, cache_image_from_bytes, cache_image_from_url,
    cache_video_from_bytes, get_audio_cache_dir, get_document_cache_dir, get_image_cache_dir, get_video_cache_dir,
    _ssrf_redirect_guard, is_safe_url, validate_inbound_media_size, validate_media_delivery_path,
)
from .sending import SendDefaults
from .text import (
    NETWORK_ERRORS, classify_send_error, extract_images, extract_media, fence_after, safe_url_for_log,
    split_text, utf16_len,
)

# Commands answered while the conversation's turn runs (it waits for them), not queued behind it.
ANSWERS_A_RUNNING_TURN = frozenset({"approve", "deny"})

__all__ = [
    "BasePlatformAdapter", "MessageEvent", "MessageType", "MessageHandler", "SendResult", "ProcessingOutcome",
    "EphemeralReply", "SEND_ERROR_KINDS", "Platform", "PlatformConfig", "SessionSource", "build_session_key",
    "cache_image_from_bytes", "cache_image_from_url", "cache_audio_from_bytes", "cache_audio_from_url",
    "cache_video_from_bytes", "cache_document_from_bytes", "get_image_cache_dir", "get_audio_cache_dir",
    "get_video_cache_dir", "get_document_cache_dir", "DEFAULT_INBOUND_MEDIA_MAX_BYTES", "SUPPORTED_DOCUMENT_TYPES",
    "SUPPORTED_VIDEO_TYPES", "classify_send_error", "utf16_len", "safe_url_for_log", "is_safe_url",
    "_ssrf_redirect_guard", "validate_inbound_media_size", "validate_media_delivery_path",
    "coerce_plaintext_gateway_command", "CachedMedia", "cache_media_bytes", "SUPPORTED_IMAGE_DOCUMENT_TYPES",
]

log = logging.getLogger("hermes.gateway")

ERROR_REPLY = "Sorry, I encountered an error ({kind}).\n{detail}\nTry again or use /reset to start a fresh session."


class BasePlatformAdapter(SendDefaults, ABC):
    """A messaging platform's adapter (Hermes' base class; see the module's docstring)."""

    gateway_runner: Any = None
    supports_code_blocks = False
    supports_status_text = False
    supports_async_delivery = True
    splits_long_messages = False  # True: `send` splits long text itself
    typed_command_prefix = "/"
    interactive_resume = True
    REQUIRES_EDIT_FINALIZE = False
    SEND_RETRY_DELAY = 2.0  # seconds before the first retry of a failed send (doubling)

    def __init__(self, config: PlatformConfig, platform: Platform) -> None:
        self.config = config
        self.platform = platform
        self._message_handler: MessageHandler | None = None
        self._fatal_error_handler: Callable[[BasePlatformAdapter], Awaitable[Any]] | None = None
        self._platform_event_handler: Callable[..., Awaitable[Any]] | None = None
        self._reaction_handler: Callable[..., Awaitable[Any]] | None = None
        self._busy_session_handler: Callable[..., Awaitable[Any]] | None = None
        self._authorization_check: Callable[..., Any] | None = None
        self._session_store: Any = None
        self._running = False
        self._fatal_error_code: str | None = None
        self._fatal_error_message: str | None = None
        self._fatal_error_retryable = True
        self._active_sessions: dict[str, asyncio.Event] = {}
        self._pending_messages: dict[str, MessageEvent] = {}
        self._queues: dict[str, deque[MessageEvent]] = {}
        self._background_tasks: set[asyncio.Task[Any]] = set()
        self._typing_paused: set[str] = set()
        self._registered_max_length = 0  # the registration's `max_message_length`, set by the gateway
        self._platform_lock: tuple[str, str] | None = None

    # -- what an adapter implements -----------------------------------------------------------

    @abstractmethod
    async def connect(self, *, is_reconnect: bool = False) -> bool:
        """Connect to the platform and start receiving; True when connected."""

    @abstractmethod
    async def disconnect(self) -> None:
        """Stop receiving and close the connection."""

    @abstractmethod
    async def send(self, chat_id: str, content: str, reply_to: str | None = None,
                   metadata: dict[str, Any] | None = None) -> SendResult:
        """Send `content` (at most the platform's length) to `chat_id`."""

    @abstractmethod
    async def get_chat_info(self, chat_id: str) -> dict[str, Any]:
        """`{"name": ..., "type": "dm" | "group" | "channel", ...}` of a chat."""

    async def send_typing(self, chat_id: str, metadata: dict[str, Any] | None = None) -> None:
        """Show that an answer is being written (no-op unless the platform has it)."""

    async def stop_typing(self, chat_id: str) -> None:
        """Stop showing it."""

    # -- what the gateway sets ------------------------------------------------------------------

    def set_message_handler(self, handler: MessageHandler | None) -> None:
        self._message_handler = handler

    def set_fatal_error_handler(self, handler: Callable[[BasePlatformAdapter], Awaitable[Any]] | None) -> None:
        self._fatal_error_handler = handler

    def set_platform_event_handler(self, handler: Callable[..., Awaitable[Any]] | None) -> None:
        self._platform_event_handler = handler

    def set_reaction_handler(self, handler: Callable[..., Awaitable[Any]] | None) -> None:
        self._reaction_handler = handler

    def set_busy_session_handler(self, handler: Callable[..., Awaitable[Any]] | None) -> None:
        self._busy_session_handler = handler

    def set_authorization_check(self, check: Callable[..., Any] | None) -> None:
        self._authorization_check = check

    def set_session_store(self, store: Any) -> None:
        self._session_store = store

    # -- state ------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.platform.value.title()

    @property
    def is_connected(self) -> bool:
        return self._running

    @property
    def has_fatal_error(self) -> bool:
        return self._fatal_error_message is not None

    @property
    def fatal_error_message(self) -> str | None:
        return self._fatal_error_message

    @property
    def fatal_error_code(self) -> str | None:
        return self._fatal_error_code

    @property
    def fatal_error_retryable(self) -> bool:
        return self._fatal_error_retryable

    @property
    def enforces_own_access_policy(self) -> bool:
        return False

    @property
    def authorization_is_upstream(self) -> bool:
        return False

    def _mark_connected(self) -> None:
        self._running = True
        self._fatal_error_code = self._fatal_error_message = None

    def _mark_disconnected(self) -> None:
        self._running = False

    def _set_fatal_error(self, code: str, message: str, *, retryable: bool) -> None:
        """Say that the connection is lost (`retryable`: the gateway reconnects with backoff)."""
        self._running = False
        self._fatal_error_code, self._fatal_error_message, self._fatal_error_retryable = code, message, retryable

    async def _notify_fatal_error(self) -> None:
        if self._fatal_error_handler is not None:
            await self._fatal_error_handler(self)

    def _acquire_platform_lock(self, scope: str, identity: str, resource_desc: str) -> bool:
        """Hold `identity` (a token, a mailbox) for this process (`gateway.status`); when another
        gateway holds it, a fatal error says which process, and False."""
        from ..status import acquire_scoped_lock

        acquired, holder = acquire_scoped_lock(scope, identity, {"platform": self.platform.value})
        if acquired:
            self._platform_lock = (scope, identity)
            return True
        pid = holder.get("pid") if isinstance(holder, dict) else None
        self._set_fatal_error(f"{scope}_lock", f"{resource_desc} is already in use by another gateway"
                              + (f" (pid {pid})" if pid else ""), retryable=True)
        return False

    def _release_platform_lock(self) -> None:
        from ..status import release_scoped_lock

        held, self._platform_lock = getattr(self, "_platform_lock", None), None
        if held is not None:
            release_scoped_lock(*held)

    def _wire_plugin_handlers(self, native: Any = None) -> None:
        """Hermes runs `ctx.register_platform_handler` factories here; hermes-core has none to run."""

    # -- receiving --------------------------------------------------------------------------------

    def build_source(self, chat_id: Any, chat_name: str | None = None, chat_type: str = "dm",
                     user_id: Any = None, user_name: str | None = None, thread_id: Any = None,
                     chat_topic: str | None = None, user_id_alt: Any = None, chat_id_alt: Any = None,
                     is_bot: bool = False, scope_id: Any = None, guild_id: Any = None, parent_chat_id: Any = None,
                     message_id: Any = None, role_authorized: bool = False, auto_thread_created: bool = False,
                     auto_thread_initial_name: str | None = None) -> SessionSource:
        """The `SessionSource` of a message from this platform (ids as strings)."""
        def text(value: Any) -> str | None:
            return None if value is None else str(value)

        return SessionSource(
            platform=self.platform, chat_id=str(chat_id), chat_name=chat_name, chat_type=chat_type,
            user_id=text(user_id), user_name=user_name, thread_id=text(thread_id), chat_topic=chat_topic,
            user_id_alt=text(user_id_alt), chat_id_alt=text(chat_id_alt), is_bot=is_bot,
            scope_id=text(scope_id or guild_id), parent_chat_id=text(parent_chat_id), message_id=text(message_id),
            role_authorized=role_authorized, auto_thread_created=auto_thread_created,
            auto_thread_initial_name=auto_thread_initial_name,
        )

    def session_key_for(self, source: SessionSource) -> str:
        return session_key_for(source, getattr(self.config, "extra", None))

    async def handle_message(self, event: MessageEvent) -> None:
        """Hand a received message to the gateway; returns at once. Its conversation's messages
        are answered one after another, other conversations' meanwhile; `/approve` and `/deny`
        at once, since the turn before them waits for them."""
        if self._message_handler is None or event.source is None:
            return
        key = self.session_key_for(event.source)
        if key in self._active_sessions and event.is_command() and event.get_command() in ANSWERS_A_RUNNING_TURN:
            self._background(self._process_message_background(event, key), key)  # now: the turn waits for it
            return
        self._queues.setdefault(key, deque()).append(event)
        if key in self._active_sessions:
            return
        self._active_sessions[key] = asyncio.Event()
        self._background(self._drain(key), key)

    def _background(self, work: Any, key: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=f"hermes-gateway:{key}")
        self._background_tasks.add(task)
        task.add_done_callback(self._background_tasks.discard)

    async def _drain(self, key: str) -> None:
        queue = self._queues[key]
        try:
            while queue:
                await self._process_message_background(queue.popleft(), key)
        finally:
            self._active_sessions.pop(key, None)
            if not queue:
                self._queues.pop(key, None)

    async def _keep_typing(self, chat_id: str, metadata: dict[str, Any] | None) -> None:
        while True:
            if chat_id not in self._typing_paused:
                try:
                    await asyncio.wait_for(self.send_typing(chat_id, metadata=metadata), 1.5)
                except Exception:  # noqa: BLE001 - typing is a courtesy
                    pass
            await asyncio.sleep(2)

    async def _process_message_background(self, event: MessageEvent, session_key: str) -> None:
        """Answer one message: the gateway's handler, then the answer through `send`."""
        assert self._message_handler is not None
        chat_id = event.source.chat_id
        metadata = {"thread_id": event.source.thread_id} if event.source.thread_id else None
        typing = (asyncio.get_running_loop().create_task(self._keep_typing(chat_id, metadata))
                  if getattr(self.config, "typing_indicator", True) else None)
        outcome = ProcessingOutcome.SUCCESS
        response: Any = None
        try:
            await self._quietly(self.on_processing_start(event), "on_processing_start")
            try:
                response = await self._message_handler(event)
            except asyncio.CancelledError:
                outcome = ProcessingOutcome.CANCELLED
                raise
            except Exception as exc:  # noqa: BLE001 - the conversation goes on
                log.warning("%s: answering a message failed: %s: %s", self.platform.value, type(exc).__name__, exc)
                outcome = ProcessingOutcome.FAILURE
                response = ERROR_REPLY.format(kind=type(exc).__name__, detail=str(exc)[:300])
        finally:
            if typing is not None:
                typing.cancel()
                await self._quietly(self.stop_typing(chat_id), "stop_typing")
            if outcome is ProcessingOutcome.CANCELLED:
                await self._quietly(self.on_processing_complete(event, outcome), "on_processing_complete")
        if response:
            if not await self.deliver(chat_id, str(response), reply_to=event.message_id, metadata=metadata):
                outcome = ProcessingOutcome.FAILURE
        await self._quietly(self.on_processing_complete(event, outcome), "on_processing_complete")

    async def _quietly(self, call: Awaitable[Any], what: str) -> None:
        try:
            await call
        except Exception as exc:  # noqa: BLE001 - an adapter's callback never ends a conversation
            log.warning("%s: %s failed: %s: %s", self.platform.value, what, type(exc).__name__, exc)

    def max_message_length_for_chat(self, chat_id: str) -> int:
        return int(getattr(self, "MAX_MESSAGE_LENGTH", 0) or self._registered_max_length or 4096)

    async def deliver(self, chat_id: str, text: str, *, reply_to: str | None = None,
                      metadata: dict[str, Any] | None = None) -> bool:
        """Send `text` in pieces the platform takes, each with retries; whether all were sent."""
        limit = self.max_message_length_for_chat(chat_id)
        pieces = [text] if self.splits_long_messages else self.truncate_message(text, limit)
        mode = getattr(self.config, "reply_to_mode", "first")
        for number, piece in enumerate(pieces):
            anchor = reply_to if mode == "all" or (mode == "first" and number == 0) else None
            result = await self._send_with_retry(chat_id, piece, reply_to=anchor, metadata=metadata)
            if not result.success:
                return False
        return True

    async def _send_with_retry(self, chat_id: str, content: str, reply_to: str | None = None,
                               metadata: dict[str, Any] | None = None, max_retries: int = 2,
                               base_delay: float | None = None) -> SendResult:
        """`send`, retried (with backoff) when it raises or reports a retryable failure."""
        backoff = Backoff(self.SEND_RETRY_DELAY if base_delay is None else base_delay)
        result = SendResult(success=False, error="not sent")
        for attempt in range(max_retries + 1):
            try:
                result = await self.send(chat_id, content, reply_to=reply_to, metadata=metadata)
                if not isinstance(result, SendResult):
                    result = SendResult(success=bool(result))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a failing send is retried, then reported
                result = SendResult(success=False, error=f"{type(exc).__name__}: {exc}", retryable=True,
                                    error_kind=classify_send_error(exc))
            if result.success:
                return result
            retryable = result.retryable or any(word in (result.error or "").lower() for word in NETWORK_ERRORS)
            if not retryable or attempt == max_retries:
                break
            log.warning("%s: sending to %s failed (%s); retrying", self.platform.value, chat_id, result.error)
            wait = backoff.next()
            await asyncio.sleep(result.retry_after or wait)
        log.warning("%s: could not send to %s: %s", self.platform.value, chat_id, result.error)
        return result

    # -- what adapters may override ---------------------------------------------------------------

    async def on_processing_start(self, event: MessageEvent) -> None:
        """A message is about to be answered."""

    async def on_processing_complete(self, event: MessageEvent, outcome: ProcessingOutcome) -> None:
        """A message was answered (or failed, or was cancelled)."""

    async def cancel_background_tasks(self) -> None:
        """Cancel every conversation this adapter is answering, and wait until they have ended."""
        tasks = list(self._background_tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def pause_typing_for_chat(self, chat_id: str) -> None:
        self._typing_paused.add(chat_id)

    def resume_typing_for_chat(self, chat_id: str) -> None:
        self._typing_paused.discard(chat_id)

    # -- text helpers -------------------------------------------------------------------------------

    @staticmethod
    def truncate_message(content: str, max_length: int = 4096, len_fn: Callable[[str], int] | None = None) -> list[str]:
        """`content` in pieces of at most `max_length` (by `len_fn`, else characters): cut at a line
        break, else a space; a code block cut in two is closed and reopened; ` (i/n)` ends each piece."""
        measure = len_fn or len
        if measure(content) <= max_length:
            return [content]
        pieces = split_text(content, max(max_length - 10, 20), measure)  # 10: room for " (12/34)"
        total = len(pieces)
        return [f"{piece} ({number}/{total})" for number, piece in enumerate(pieces, 1)] if total > 1 else pieces

    validate_media_delivery_path = staticmethod(validate_media_delivery_path)
    extract_images = staticmethod(extract_images)
    extract_media = staticmethod(extract_media)
