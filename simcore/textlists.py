"""Comma-separated integer lists ('0,3', '0, 5,'): the one grammar of chip, core and track ids
in every option that takes them (trnx capture's --cores and --detail-chips, the selection's
--chips, --cores and --tracks in explorer.model.scope)."""

from __future__ import annotations


def int_list(text: str) -> list[int]:
    """'0,3' -> [0, 3], in the order given, blanks between commas skipped; ValueError when an
    item is not an integer (callers turn it into their option's one sentence)."""
    return [int(x) for x in str(text).split(",") if x.strip()]
