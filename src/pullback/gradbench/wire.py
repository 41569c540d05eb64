"""The GradBench wire format: bounded lines of bytes in, strict JSON lines out.

Contract:
- `read_lines(stream, max_bytes)` yields each line of a binary stream (without
  its line ending) as bytes, or a `TooLong` for a line above `max_bytes`,
  whose bytes are skipped in chunks, never held. A last line without a newline
  (the client closed its end mid-line) is yielded like any other.
- `parse(line, limits)` decodes one line (bytes or str) to a JSON value and a
  list of problems found while parsing (non-finite constants, duplicate keys),
  or raises `WireError`. It rejects invalid UTF-8, nesting deeper than
  `limits.max_depth` (checked by a scan of the bytes before `json.loads`, so
  no `RecursionError`) and anything `json.loads` rejects.
- `dumps(reply)` is `json.dumps` with `allow_nan=False`: strict JSON (no NaN
  or Infinity), ASCII only, on one line.
See Note [gradbench-hardening] in docs/design.md.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np


class WireError(Exception):
    """A line that is not a usable JSON message. `value` is what could still be read
    (after replacing invalid UTF-8), for recovering the message's id; else None.
    `head` is the line's first bytes, for `leading_id`."""

    def __init__(self, msg, value=None, head=b""):
        super().__init__(msg)
        self.value = value
        self.head = head


# The first key of a top-level object, when it is "id" with a plain integer or string value.
_LEADING_ID = re.compile(rb'\A[ \t\r]*\{[ \t\r]*"id"[ \t\r]*:[ \t\r]*'
                         rb'(-?(?:0|[1-9][0-9]{0,17})|"[A-Za-z0-9_.:-]{0,64}")[ \t\r]*[,}]')


def leading_id(head: bytes):
    """The id of a line that could not be parsed, when the line starts with
    `{"id": <int or plain string>,`; else None. Only the top-level object's
    first key is read, so a nested "id" is never taken for the message's."""
    m = _LEADING_ID.match(head)
    if m is None:
        return None
    return json.loads(m.group(1))


@dataclass
class TooLong:
    """A line longer than the limit; `size` is its length in bytes, `head` its first bytes."""
    size: int
    head: bytes


_CHUNK = 1 << 20  # bytes read at a time while skipping a long line


def read_lines(stream, max_bytes: int):
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-2] if line.endswith(b"\r\n") else line[:-1]
        elif len(line) <= max_bytes:
            yield line  # the last line, without a newline
        else:
            size, head = len(line), line[:256]
            del line
            while True:
                chunk = stream.readline(_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if chunk.endswith(b"\n"):
                    size -= 1
                    break
            yield TooLong(size, head)


# A JSON string: the quote, then runs of ordinary bytes or escapes, then the quote.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_depth(data: bytes, stop: int) -> int:
    """The deepest nesting of [ and { in `data` outside JSON strings (or the
    count of opening brackets, when that is at most `stop`). Never less than the
    depth `json.loads` reaches before it succeeds or fails: an unterminated
    string's contents count as structure, which can only overestimate."""
    opens = data.count(b"[") + data.count(b"{")
    if opens <= stop:
        return opens
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    a = np.frombuffer(brackets, dtype=np.uint8)
    depth = deepest = 0
    for start in range(0, len(a), _CHUNK):  # in chunks, to bound the temporaries
        c = a[start:start + _CHUNK]
        run = depth + np.cumsum(((c == 91) | (c == 123)).astype(np.int32) * 2 - 1, dtype=np.int64)
        deepest = max(deepest, int(run.max()))
        if deepest > stop:
            break
        depth = int(run[-1])
    return deepest


@dataclass
class Parsed:
    """A decoded message: `problems` found while parsing (each a sentence), and
    whether some object repeats the key "id" (which makes the id ambiguous)."""
    value: object
    problems: list
    duplicate_id: bool


def parse(line, max_depth: int) -> Parsed:
    """One message line, decoded; raises WireError. See the module docstring."""
    if isinstance(line, str):
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError as e:
            raise WireError(f"line holds a lone surrogate at character {e.start}") from None
    else:
        data = bytes(line)
    head = data[:256]
    if not data.strip():
        raise WireError("empty line: expected one JSON message per line")
    depth = nesting_depth(data, max_depth)
    if depth > max_depth:
        raise WireError(f"message nests arrays/objects more than {max_depth} deep", head=head)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        value = None
        try:
            value = _loads(data.decode("utf-8", errors="replace")).value
        except (ValueError, RecursionError):
            pass
        raise WireError(f"line is not valid UTF-8 (byte {e.start}: {data[e.start:e.start + 1]!r})",
                        value, head) from None
    try:
        return _loads(text)
    except RecursionError:  # belt and braces: the depth scan should have caught it
        raise WireError("message nests too deep", head=head) from None
    except ValueError as e:  # JSONDecodeError, and int conversion beyond 4300 digits
        raise WireError(f"malformed JSON: {e}", head=head) from None


def _loads(text) -> Parsed:
    problems = []
    dup_id = []

    def constant(name):
        problems.append(f"the non-finite constant {name} is not JSON")
        return float(name.replace("Infinity", "inf"))

    def pairs(items):
        d = dict(items)
        if len(d) != len(items):
            seen, dups = set(), []
            for k, _ in items:
                if k in seen and k not in dups:
                    dups.append(k)
                seen.add(k)
            problems.append("duplicate key " + ", ".join(repr(k[:60]) for k in dups[:3]) + " in an object")
            if "id" in dups:
                dup_id.append(True)
        return d

    value = json.loads(text, parse_constant=constant, object_pairs_hook=pairs)
    return Parsed(value, problems, bool(dup_id))


def clean_text(s: str) -> str:
    """`s` with lone surrogates escaped, so that strict JSON parsers accept it."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def dumps(reply) -> str:
    return json.dumps(reply, allow_nan=False, ensure_ascii=True)
