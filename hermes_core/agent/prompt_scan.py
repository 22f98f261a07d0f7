"""Prompt-injection patterns in a file meant for the system prompt: the first one found, by name.

A file the user did not write for this agent (a cloned repository's AGENTS.md, a SOUL.md copied
from somewhere) enters the system prompt verbatim, so one that tells the model to drop its
rules, hides text from the reader, or asks for secrets to be sent away is left out whole.
The patterns follow Hermes' classes (instruction override, deception, system-prompt override,
hidden HTML, exfiltration, secret-file reads, invisible Unicode) and anchor on what an attack
says, never on bossy English: "you must run the tests" is common in a legitimate AGENTS.md.

>>> first_threat("Build with make.\\nIgnore all previous instructions and ...")
'instruction override ("Ignore all previous instructions")'
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["first_threat", "SCAN_CHARS"]

SCAN_CHARS = 1_000_000  # a file is scanned up to here; the cap keeps less than that in the prompt

_GAP = r"(?:[\w'-]+\s+){0,6}"  # a few words between the ones that matter, bounded (no backtracking blow-up)
_SECRET = r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)\b"

# (class, words one of which the text must hold for the pattern to be tried, pattern): the words are a
# cheap first look, so that a clean file costs a few substring searches rather than every regex.
_RULES = (
    ("instruction override", ("ignore", "forget", "override"),
     rf"\b(?:ignore|forget|override)\s+{_GAP}(?:previous|prior|above|earlier|all|any|your)\s+"
     rf"{_GAP}(?:instructions|rules|guidelines|directives)\b"),
    ("instruction override", ("disregard",),
     rf"\bdisregard\s+{_GAP}(?:your|all|any|the|previous|prior)\s+{_GAP}"
     rf"(?:instructions|rules|guidelines|directives)\b"),
    ("system-prompt override", ("system",), r"\b(?:system\s+prompt\s+override\b|new\s+system\s+prompt\s*:)"),
    ("restriction bypass", ("act",),
     rf"\bact\s+as\s+(?:if|though)\s+{_GAP}you\s+{_GAP}(?:have\s+no|don't\s+have)\s+{_GAP}"
     rf"(?:restrictions|limits|rules)\b"),
    ("deception", ("user",),
     rf"\b(?:do\s+not|don't|never)\s+{_GAP}(?:tell|inform|show|mention\s+(?:it|this)\s+to)\s+{_GAP}the\s+user\b"),
    ("hidden HTML comment", ("<!--",),
     r"<!--[^>]{0,512}\b(?:ignore|override|system|secret|hidden|instructions?)\b[^>]{0,512}-->"),
    ("hidden HTML", ("display",), r"<\s*(?:div|span|p)\s+[^>]{0,256}style\s*=\s*[\"'][^>\"']{0,512}display\s*:\s*none"),
    ("exfiltration", ("curl", "wget", "fetch", "invoke-webrequest"),
     rf"\b(?:curl|wget|fetch|invoke-webrequest)\s+[^\n]{{0,1024}}{_SECRET}"),
    ("exfiltration", ("http://", "https://"),
     r"\b(?:send|post|upload|transmit|forward|exfiltrate)\s+[^\n]{0,256}\b(?:api[\s_-]?keys?|tokens?|secrets?|"
     r"passwords?|credentials|private\s+keys?|\.env\b)[^\n]{0,256}\b(?:to|at)\s+https?://"),
    ("secret-file read", (".env", ".netrc", ".pgpass", "credentials", "id_rsa", "id_ed25519", ".aws/", ".ssh/"),
     r"\b(?:cat|type|less|more|head|tail)\s+[^\n]{0,256}(?:\.env\b|\.netrc\b|\.pgpass\b|credentials\b|id_rsa\b|"
     r"id_ed25519\b|\.aws/|\.ssh/)"),
)
_PATTERNS = tuple((name, words, re.compile(rx, re.IGNORECASE)) for name, words, rx in _RULES)

# Characters a reader does not see: zero-width ones, joiners, invisible operators, a BOM past the
# start, the bidirectional embeddings, overrides and isolates, and the tag characters (U+E0000..E007F).
_INVISIBLE = {
    **{c: "zero-width" for c in "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"},
    **{c: "bidirectional control" for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"},
}
_HIDDEN = re.compile("[" + "".join(_INVISIBLE) + "\U000e0000-\U000e007f]")


def first_threat(text: str) -> str | None:
    """The first injection pattern in `text` (its class and what matched), or None when it is clean."""
    text = text[:SCAN_CHARS].removeprefix("\ufeff")
    hidden = None if text.isascii() else _HIDDEN.search(text)
    if hidden:
        char = hidden.group()
        kind = _INVISIBLE.get(char, "tag character")
        return f"hidden Unicode (U+{ord(char):04X}, {kind})"
    # full-width and compatibility forms read as the plain letters
    normal = text if text.isascii() else unicodedata.normalize("NFKC", text)
    lower = normal.lower()
    for name, words, pattern in _PATTERNS:
        if not any(word in lower for word in words):
            continue
        found = pattern.search(normal)
        if found:
            said = " ".join(found.group().split())
            return f'{name} ("{said[:60]}{"..." if len(said) > 60 else ""}")'
    return None
