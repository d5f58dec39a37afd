"""Reading a Parquet prompt set (SPEED-Bench) under the limits a JSONL one has (docs/untrusted-input.md).

A Parquet file is compressed and may be dictionary-encoded: 7.5 KB of zstd holds a 200 MB prompt, and 6 KB
whose dictionary holds one 1 MB turn decodes to 2000 rows of it (2 GB). So the file's size says nothing
about what it decodes to, and nothing is decoded before it is known to fit:

1. from the footer alone: the number of rows (the prompt limit), the columns and their types, and per row
   group the uncompressed size of the columns read (their sum, and each row group's average per row);
2. then one row group at a time, its text columns read as dictionaries (llama.cpp's prompt bytes stay
   encoded: a repeated 1 MB turn is 1 MB however many rows use it), each row's decoded size computed from
   the dictionary and the indices, and checked against the per-prompt and the whole-set limits;
3. only then is that row group decoded into Python rows.

Everything past a limit is one line (SpectuiError) that names the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..contract.errors import SpectuiError

LIMITS = "(limits: docs/untrusted-input.md)"
_PER_VALUE = 4  # what a value costs besides its bytes (a JSON record spends at least `"",` on an empty string)


@dataclass(frozen=True)
class ParquetLimits:
    """The JSONL limits, as they apply to a Parquet file: its rows, one row's text, all its text."""

    rows: int
    row_bytes: int
    total_bytes: int


def read_rows(data: bytes, spec: str, columns: tuple[str, ...], optional: tuple[str, ...],
              limits: ParquetLimits) -> list[dict]:
    """The rows of a Parquet file as dicts of ``columns`` (and those of ``optional`` it has), read within
    ``limits`` (see the module docstring).

    Args:
        data: the file's bytes (read once, within the file-size limit); spec: its name as given (what the
            messages say).
        columns: the columns it must have; optional: those read when present.
        limits: the rows, the bytes of one row's text and of all of it.

    Returns:
        One dict per row, in the file's order.

    Raises:
        SpectuiError: not a readable Parquet file, a column missing or of a type that holds no prompt text, or
            a limit passed (before the row group that passes it is decoded).
    """
    import pyarrow as pa  # noqa: PLC0415 - only for Parquet files
    import pyarrow.parquet as pq  # noqa: PLC0415

    try:
        meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a broken file
        raise SpectuiError(f"--prompts: {spec} is not a readable Parquet file: {_first_line(exc)}") from None
    if meta.num_rows > limits.rows:
        raise SpectuiError(f"--prompts: {spec} holds {meta.num_rows:,} rows, more than {limits.rows:,} prompts "
                           f"(from its footer, nothing decoded) {LIMITS}")
    names = [meta.schema.column(i).path.split(".")[0] for i in range(meta.num_columns)]
    lacking = [c for c in columns if c not in names]
    if lacking:
        raise SpectuiError(f"--prompts: {spec} lacks the column(s) {', '.join(lacking)}: not SPEED-Bench "
                           "(question_id, category, sub_category, turns)")
    wanted = list(columns) + [c for c in optional if c in names]
    leaves = [i for i in range(meta.num_columns) if meta.schema.column(i).path.split(".")[0] in wanted]
    _check_footer(meta, leaves, spec, limits)
    text_leaves = [meta.schema.column(i).path for i in leaves if meta.schema.column(i).physical_type == "BYTE_ARRAY"]
    try:
        pf = pq.ParquetFile(pa.BufferReader(data), read_dictionary=text_leaves)
    except Exception as exc:  # noqa: BLE001
        raise SpectuiError(f"--prompts: {spec} is not a readable Parquet file: {_first_line(exc)}") from None
    _check_types(pf.schema_arrow, wanted, spec)
    rows: list[dict] = []
    total = 0
    for g in range(meta.num_row_groups):
        try:
            table = pf.read_row_group(g, columns=wanted, use_threads=False)
        except Exception as exc:  # noqa: BLE001
            raise SpectuiError(f"--prompts: {spec} is not a readable Parquet file: {_first_line(exc)}") from None
        total = _check_rows(table, spec, len(rows), total, limits)
        rows.extend(table.to_pylist())
    return rows


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _check_footer(meta, leaves: list[int], spec: str, limits: ParquetLimits) -> None:
    """The sizes the footer gives, before anything is decoded: all the columns read, uncompressed, within the
    whole-set limit, and no row group whose rows average more than one prompt's limit."""
    total = 0
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        size = sum(rg.column(i).total_uncompressed_size + _PER_VALUE * rg.column(i).num_values for i in leaves)
        if rg.num_rows and size > limits.row_bytes * rg.num_rows:
            raise SpectuiError(
                f"--prompts: {spec} row group {g + 1} holds {size:,} bytes for {_rows(rg.num_rows)} (from its footer): "
                f"a prompt longer than {limits.row_bytes >> 20} MiB, nothing decoded {LIMITS}")
        total += size
        if total > limits.total_bytes:
            raise SpectuiError(
                f"--prompts: {spec} holds more than {limits.total_bytes >> 20} MiB of prompt text uncompressed "
                f"(from its footer, nothing decoded) {LIMITS}")


def _rows(n: int) -> str:
    return "1 row" if n == 1 else f"{n:,} rows"


def _check_types(schema, wanted: list[str], spec: str) -> None:
    """Every column read holds numbers, text or lists of text (what a prompt set is made of)."""
    for name in wanted:
        t = schema.field(name).type
        if not _plain(t) and not (_is_list(t) and _plain(t.value_type)):
            raise SpectuiError(f"--prompts: {spec}: the column {name} is {t}: not SPEED-Bench (numbers, text, "
                               "lists of text)")


def _plain(t) -> bool:
    import pyarrow as pa  # noqa: PLC0415

    if pa.types.is_dictionary(t):
        t = t.value_type
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_null(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _is_list(t) -> bool:
    import pyarrow as pa  # noqa: PLC0415

    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _check_rows(table, spec: str, first: int, total: int, limits: ParquetLimits) -> int:
    """Each row's decoded size (from the dictionaries and the indices, before any decoding) within one
    prompt's limit, and the running total within the whole set's; returns the new total."""
    import numpy as np  # noqa: PLC0415

    sizes = np.zeros(table.num_rows, dtype=np.int64)
    for col in table.columns:
        offset = 0
        for chunk in col.chunks:
            sizes[offset: offset + len(chunk)] += _value_bytes(chunk)
            offset += len(chunk)
    if table.num_rows:
        worst = int(sizes.argmax())
        if sizes[worst] > limits.row_bytes:
            raise SpectuiError(f"--prompts: {spec} row {first + worst + 1} is longer than {limits.row_bytes >> 20} "
                               f"MiB ({int(sizes[worst]):,} bytes decoded) {LIMITS}")
    total += int(sizes.sum())
    if total > limits.total_bytes:
        raise SpectuiError(f"--prompts: {spec} holds more than {limits.total_bytes >> 20} MiB of prompt text "
                           f"(row {first + table.num_rows} reached it) {LIMITS}")
    return total


def _value_bytes(a):
    """Per element of the Arrow array ``a``: the bytes it decodes to (a number: 8; a list: its values')."""
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    t = a.type
    if pa.types.is_dictionary(t):
        per_entry = _value_bytes(a.dictionary)
        idx = a.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        out = per_entry[idx] if len(per_entry) else np.zeros(len(a), dtype=np.int64)
        return np.where(a.is_null().to_numpy(zero_copy_only=False), 0, out)
    if _is_list(t):
        values = _value_bytes(a.flatten())
        parents = pc.list_parent_indices(a).to_numpy(zero_copy_only=False)
        return np.bincount(parents, weights=values, minlength=len(a)).astype(np.int64)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pc.binary_length(a).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) + _PER_VALUE
    return np.full(len(a), 8, dtype=np.int64)
