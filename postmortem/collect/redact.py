"""Secrets kept out of every text `collect` writes: by variable name and by value.

By name: a variable whose name says it holds a secret (TOKEN, SECRET, KEY, PASSWORD, and
name parts like AUTH, PWD, PASS, CREDS) has its whole value replaced, in env dumps and in
`NAME=value` text anywhere.  By value: well-known token shapes (GitHub, GitLab, Slack,
OpenAI-style, AWS access keys), `Bearer`/`Basic` credentials, `--password X`/`--token X`
options, signed-URL signatures, PEM/OpenSSH private key blocks (across lines), and URL
credentials in any form (a password holding `/` or `#`, `user:pw@host` without a scheme).
Every pattern is linear: no nested quantifiers.
"""
from __future__ import annotations

import re

REDACTED = "<redacted>"
MAX_USERINFO = 4096      # how far past `scheme://` an `@` is looked for
URL_RUN = re.compile(r"[^\s\"'<>]{0,%d}" % MAX_USERINFO)

# Whole words inside a name (split on _ - .) or substrings that mark a secret-holding name.
SECRET_NAME_PARTS = frozenset({"AUTH", "PWD", "PASS", "PASSWD", "PASSWORD", "CREDS", "CREDENTIAL",
                               "CREDENTIALS", "COOKIE", "SESSION", "SIG", "SIGNATURE", "PRIVATE"})
SECRET_NAME_WORDS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL")

VALUE_PATTERNS = [
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{16,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bxox[a-z]-[A-Za-z0-9\-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
]
# (prefix kept, secret replaced)
KEEP_PREFIX_PATTERNS = [
    re.compile(r"(?i)(\b(?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=\-]{6,}"),
    re.compile(r"(?i)(--?(?:password|passwd|pass|pwd|token|secret|api[-_]?key|access[-_]?key"
               r"|secret[-_]?key|auth|credentials?)(?:=|\s+))[^\s]+"),
    re.compile(r"(?i)(\bX-(?:Amz|Goog)-(?:Signature|Credential|Security-Token)=)[^&\s\"']+"),
    re.compile(r"(?i)([?&](?:sig|signature|token|access_token|api_key|apikey|key|password)=)[^&\s\"']+"),
]
ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>=|: )(?P<value>[^\s,;]+)")
SCHEME = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://")
BARE_USERINFO = re.compile(r"(?<![\w/:@.])[A-Za-z0-9._%+\-]{1,256}:[^\s@/:]+@(?=[A-Za-z0-9])")
PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    if any(word in upper for word in SECRET_NAME_WORDS):
        return True
    return any(part in SECRET_NAME_PARTS for part in re.split(r"[_.\-]", upper))


def _url_credentials(text: str) -> str:
    """scheme://userinfo@host -> scheme://<redacted>@host; the userinfo runs to the last `@`
    before the query, so a password holding `/`, `#` or `@` is covered whole."""
    out, at, skip_to = [], 0, 0
    for m in SCHEME.finditer(text):
        if m.start() < skip_to:
            continue
        start = m.end()
        whole = URL_RUN.match(text, start).group(0)
        skip_to = start + len(whole)          # one URL per run of non-space characters
        cut = whole.split("?", 1)[0].rfind("@")
        if cut > 0:
            out.append(text[at:start] + REDACTED)
            at = start + cut
    out.append(text[at:])
    return "".join(out)


def redact_line(line: str) -> str:
    """One line of text with every secret value replaced (no PEM state: see Redactor)."""
    if not line:
        return line
    line = _url_credentials(line)
    line = BARE_USERINFO.sub(REDACTED + "@", line)
    for pattern in VALUE_PATTERNS:
        line = pattern.sub(REDACTED, line)
    for pattern in KEEP_PREFIX_PATTERNS:
        line = pattern.sub(lambda m: m.group(1) + REDACTED, line)
    return ASSIGNMENT.sub(lambda m: m.group("name") + m.group("sep") + REDACTED
                          if is_secret_name(m.group("name")) and m.group("value") != REDACTED else m.group(0), line)


class Redactor:
    """Lines in, redacted lines out; a private key block is dropped whole, across lines."""

    def __init__(self) -> None:
        self.in_key = False

    def line(self, line: str) -> str:
        if self.in_key:
            end = PEM_END.search(line)
            if end is None:
                return ""
            self.in_key = False
            rest = line[end.end():]
            return redact_line(rest) if rest.strip() else ""
        begin = PEM_BEGIN.search(line)
        if begin:
            end = PEM_END.search(line, begin.end())
            if end:
                return redact_line(line[:begin.start()] + REDACTED + line[end.end():])
            self.in_key = True
            return redact_line(line[:begin.start()]) + REDACTED + "\n"
        return redact_line(line)


def redact_text(text: str) -> str:
    r = Redactor()
    return "".join(r.line(line) for line in text.splitlines(keepends=True))


def redact_value(name: str, value: str) -> str:
    """An environment variable's value as written to env.txt."""
    if is_secret_name(name) or PEM_BEGIN.search(value) or "PRIVATE KEY" in value:
        return REDACTED
    return redact_line(value)
