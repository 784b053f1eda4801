"""Read a PyTorch-profiler (Kineto) trace file, whatever state it is in.

The importer first tries the compiled byte scanner (kineto.scan) on the bytes
`read_json_bytes` gives; a file it refuses is parsed here: msgspec straight into
typed events that hold only the fields the importer reads (kineto.schema), then
`orjson`, then further down. Real files
are often not quite JSON: a profiler killed mid-write leaves a truncated file, some
writers leave trailing commas, names carry raw control characters, NaN sneaks in.
Those fall through to a tolerant path (Python's decoder with `strict=False`, then
event-by-event salvage) that keeps every complete event it can find. Whatever
happens, the result is a `KinetoFile` or one `UserError` sentence.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from simcore.errors import LONG_INTEGER, UserError
from explorer.interop.kineto.schema import decode

GZIP_MAGIC = b"\x1f\x8b"
MAX_BYTES = 1 << 34  # 16 GiB of JSON: beyond that we refuse rather than exhaust memory
GZIP_MAX_RATIO = 64  # profiler JSON gzips 10-20x; a file that inflates over 64x is refused (a gzip bomb)...
GZIP_FLOOR = 64 << 20  # ...unless it stays under 64 MiB anyway
GZIP_STEP = 1 << 16  # compressed bytes per decompress call


@dataclass
class KinetoFile:
    """One rank's trace: its events and the top-level keys next to them."""

    path: Path
    events: list[Any]
    header: dict[str, Any] = field(default_factory=dict)
    repaired: str = ""  # how the file had to be repaired ("" when it parsed as-is)


def _read_bytes(path: Path) -> tuple[bytes | bytearray, str]:
    """The file's JSON bytes (gunzipped when needed) and a note if the gzip was damaged or cut short."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a Kineto trace file.") from None
    except FileNotFoundError:
        raise UserError(f"{path} does not exist.") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}.") from None
    if not raw.startswith(GZIP_MAGIC):
        return raw, ""
    return gunzip(path, raw)


def gzip_limit(compressed: int) -> int:
    """The most a gzip file of `compressed` bytes may inflate to (GZIP_MAX_RATIO, GZIP_FLOOR)."""
    return min(MAX_BYTES, max(GZIP_FLOOR, GZIP_MAX_RATIO * compressed))


def gunzip(path: Path, raw: bytes) -> tuple[bytearray, str]:
    """Stream-decompress `raw` (one or more gzip members) in bounded memory.

    Output stops at `gzip_limit(len(raw))`: a file that inflates further is refused in one
    sentence before it is held in memory (a 6 MB gzip of spaces would otherwise become 6.4 GB).
    Damage keeps everything that decompressed before it: the chunk that fails is fed again byte
    by byte from a copy of the decompressor taken before it, so the last good bytes are kept."""
    limit = gzip_limit(len(raw))
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pos, pending, note = 0, b"", ""
    while True:
        if not pending:
            if d.eof:  # a member ended: another may follow (gzip allows concatenation)
                rest = d.unused_data + raw[pos:]
                if not rest.strip(b"\x00"):
                    break
                if not rest.startswith(GZIP_MAGIC):
                    note = "trailing garbage after the gzip data ignored"
                    break
                d, raw, pos = zlib.decompressobj(16 + zlib.MAX_WBITS), rest, 0
            if pos >= len(raw):
                note = "gzip stream cut short"
                break
            pending, pos = raw[pos : pos + GZIP_STEP], pos + GZIP_STEP
        before = d.copy()
        try:
            out += d.decompress(pending, limit + 1 - len(out))
        except zlib.error:
            _salvage_gzip_chunk(before, pending, out, limit)
            note = "gzip stream damaged"
            break
        pending = d.unconsumed_tail
        if len(out) > limit:
            raise UserError(
                f"{path} inflates to more than {limit >> 20:,} MiB ({GZIP_MAX_RATIO}x its size), more than a profiler's "
                "gzip does: refused as a likely gzip bomb; if it is genuine, gunzip it and import the .json."
            )
    if not out:
        raise UserError(f"{path} is a damaged gzip file with no readable content.")
    return out, note


def _salvage_gzip_chunk(d: Any, chunk: bytes, out: bytearray, limit: int) -> None:
    """Feed `chunk` byte by byte to `d`, appending output until the byte that fails."""
    for i in range(len(chunk)):
        try:
            out += d.decompress(chunk[i : i + 1], limit + 1 - len(out))
        except zlib.error:
            return
        if len(out) > limit:
            return


def load_kineto(path: str | os.PathLike[str]) -> KinetoFile:
    """Parse one Kineto trace file (`.json` or `.json.gz`, object or bare event array)."""
    p = Path(path)
    data, note = read_json_bytes(p)
    return parse_kineto(p, data, note)


def read_json_bytes(p: Path) -> tuple[bytes | bytearray, str]:
    """The file's JSON as UTF-8 bytes (gunzipped, BOM dropped, UTF-16 re-encoded) and a
    note on any repair; one sentence for a file with nothing in it."""
    data, note = _read_bytes(p)
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark, which JSON forbids
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 (saved by a Windows editor)
        data = data.decode("utf-16", errors="replace").encode("utf-8", errors="replace")
    if not data or data.isspace():  # (no stripped copy of a file that may be gigabytes)
        raise UserError(f"{p} is empty.")
    return data, note


def parse_kineto(p: Path, data: bytes, note: str) -> KinetoFile:
    """msgspec's typed events, else orjson's, Python's non-strict decoder's, or what salvage keeps."""
    fast = decode(data)
    if fast is not None:
        return KinetoFile(p, fast[0], fast[1], note)
    try:
        doc = orjson.loads(data)
        return _from_document(p, doc, note)
    except orjson.JSONDecodeError:
        pass
    except RecursionError:
        raise UserError(f"{p} nests JSON too deeply to be a Kineto trace.") from None
    text = data.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text, strict=False)
        return _from_document(p, doc, note or "non-strict JSON (control characters or NaN)")
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise UserError(f"{p} nests JSON too deeply to be a Kineto trace.") from None
    except ValueError:  # an integer literal longer than Python converts (4,300 digits)
        raise UserError(f"{p} {LONG_INTEGER}") from None
    return _salvage(p, text, note)


def _from_document(path: Path, doc: Any, note: str) -> KinetoFile:
    if isinstance(doc, list):
        return KinetoFile(path, doc, {}, note)
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if events is None:
            raise UserError(f"{path} is JSON but not a Kineto trace (no 'traceEvents' list).")
        if not isinstance(events, list):
            raise UserError(f"{path} has a 'traceEvents' that is not a list.")
        header = {k: v for k, v in doc.items() if k != "traceEvents"}
        return KinetoFile(path, events, header, note)
    raise UserError(f"{path} is JSON but not a Kineto trace (expected an object or an event array).")


# -- salvage: event by event ------------------------------------------------------------

# Possessive quantifiers: a string is matched without remembering a way back into it, so an
# unterminated string 20 MB long costs no more than its length (the plain `(?:...)*` form made
# the regex engine keep state per character: ~130x the file's size).
_STRING_OR_TRAILING_COMMA = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|,(\s*[\]}])', re.S)
_TRAILING_COMMA = re.compile(r",\s*[\]}]")
_EVENTS_KEY = re.compile(r'"traceEvents"\s*:\s*\[')
_HEADER_KEYS = ("distributedInfo", "deviceProperties", "schemaVersion", "traceName", "baseTimeNanoseconds")


def _drop_trailing_commas(text: str) -> str:
    """Remove `,` before `]` or `}` outside strings (a linear scan; strings are left alone)."""
    if _TRAILING_COMMA.search(text) is None:  # the usual case: nothing to remove, no pass over strings
        return text
    return _STRING_OR_TRAILING_COMMA.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(0), text)


def _salvage(path: Path, text: str, note: str) -> KinetoFile:
    """Keep every complete event of a damaged file; fail if there is none."""
    decoder = json.JSONDecoder(strict=False)
    cleaned = _drop_trailing_commas(text)
    try:  # trailing commas were the only problem
        doc = decoder.decode(cleaned)
        return _from_document(path, doc, _join(note, "trailing commas removed"))
    except (ValueError, RecursionError):  # (JSONDecodeError is a ValueError, as is a 5,000-digit integer)
        pass
    header: dict[str, Any] = {}
    m = _EVENTS_KEY.search(cleaned)
    if m is not None:
        start = m.end()
        head_text = cleaned[: m.start()]
        for key in _HEADER_KEYS:
            km = re.search(rf'"{key}"\s*:\s*', head_text)
            if km is None:
                continue
            try:
                header[key], _ = decoder.raw_decode(head_text, km.end())
            except (ValueError, RecursionError):
                pass
    else:
        stripped = cleaned.lstrip()
        if not stripped.startswith("["):
            raise UserError(f"{path} is not a Kineto trace: it is neither JSON nor a damaged trace-event file.")
        start = len(cleaned) - len(stripped) + 1
    events = _decode_array_items(decoder, cleaned, start)
    if not events:
        raise UserError(f"{path} is damaged and holds no complete trace event.")
    return KinetoFile(path, events, header, _join(note, f"damaged JSON: kept {len(events):,} complete events"))


def _decode_array_items(decoder: json.JSONDecoder, text: str, pos: int) -> list[Any]:
    """Decode array items from `pos` until `]`, end of text, or the first broken item."""
    items: list[Any] = []
    n = len(text)
    ws = " \t\r\n,"
    while pos < n:
        while pos < n and text[pos] in ws:
            pos += 1
        if pos >= n or text[pos] == "]":
            break
        try:
            item, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        items.append(item)
    return items


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b
