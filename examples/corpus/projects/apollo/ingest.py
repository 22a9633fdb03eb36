"""Load Apollo shore-station CSV files into the readings database.

The shore station writes one file per buoy per day, named like
``AP-03_2024-02-12.csv``. Each file has a header row followed by one row per
ten-minute reading. Columns:

    timestamp_utc            ISO 8601, always UTC, e.g. 2024-02-12T00:10:00Z
    buoy_id                  AP-01 .. AP-10
    temperature_c            water temperature in degrees Celsius
    conductivity_ms_cm       conductivity in millisiemens per centimetre
    turbidity_ntu            turbidity in NTU
    dissolved_oxygen_mg_l    dissolved oxygen in mg/l
    battery_v                battery voltage
    rssi_dbm                 radio signal strength at the shore station

Empty fields mean "no reading" and are stored as NULL, never as zero.

Usage::

    python ingest.py --db apollo.sqlite /data/shore/incoming/*.csv
"""

from __future__ import annotations

import argparse
import csv
import logging
import sqlite3
import sys
from datetime import datetime
from pathlib import Path

log = logging.getLogger("apollo.ingest")

COLUMNS = [
    "timestamp_utc",
    "buoy_id",
    "temperature_c",
    "conductivity_ms_cm",
    "turbidity_ntu",
    "dissolved_oxygen_mg_l",
    "battery_v",
    "rssi_dbm",
]

NUMERIC = COLUMNS[2:]

SCHEMA = """
CREATE TABLE IF NOT EXISTS readings (
    timestamp_utc TEXT NOT NULL,
    buoy_id TEXT NOT NULL,
    temperature_c REAL,
    conductivity_ms_cm REAL,
    turbidity_ntu REAL,
    dissolved_oxygen_mg_l REAL,
    battery_v REAL,
    rssi_dbm REAL,
    source_file TEXT NOT NULL,
    PRIMARY KEY (buoy_id, timestamp_utc)
);
"""

# Plausibility limits. Values outside these ranges are logged and stored as
# NULL, because they almost always come from a loose connector or a sensor
# that has been fouled, not from the river.
LIMITS = {
    "temperature_c": (-2.0, 35.0),
    "conductivity_ms_cm": (0.0, 60.0),
    "turbidity_ntu": (0.0, 1000.0),
    "dissolved_oxygen_mg_l": (0.0, 20.0),
    "battery_v": (2.5, 4.0),
    "rssi_dbm": (-140.0, 0.0),
}


def parse_value(name: str, raw: str) -> float | None:
    """Convert one field to a float, or None if empty or implausible."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        log.warning("not a number in column %s: %r", name, raw)
        return None
    low, high = LIMITS[name]
    if not low <= value <= high:
        log.warning("implausible %s=%s, storing NULL", name, value)
        return None
    return value


def parse_timestamp(raw: str) -> str:
    """Validate an ISO 8601 UTC timestamp and return it unchanged."""
    if not raw.endswith("Z"):
        raise ValueError(f"timestamp is not UTC: {raw!r}")
    datetime.strptime(raw, "%Y-%m-%dT%H:%M:%SZ")
    return raw


def read_file(path: Path):
    """Yield one tuple per valid row of a shore-station file."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = set(COLUMNS) - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path.name}: missing columns {sorted(missing)}")
        for lineno, row in enumerate(reader, start=2):
            try:
                ts = parse_timestamp(row["timestamp_utc"])
            except ValueError as exc:
                log.error("%s:%d: %s", path.name, lineno, exc)
                continue
            values = [parse_value(name, row[name]) for name in NUMERIC]
            yield (ts, row["buoy_id"].strip(), *values, path.name)


def ingest(db: sqlite3.Connection, paths: list[Path]) -> int:
    """Insert all rows from the given files; return the number of new rows."""
    db.executescript(SCHEMA)
    before = db.total_changes
    for path in paths:
        rows = list(read_file(path))
        db.executemany(
            "INSERT OR IGNORE INTO readings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        log.info("%s: %d rows", path.name, len(rows))
    db.commit()
    return db.total_changes - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="apollo.sqlite", help="SQLite database")
    parser.add_argument("files", nargs="+", type=Path, help="CSV files to load")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
    )
    with sqlite3.connect(args.db) as db:
        added = ingest(db, args.files)
    log.info("done, %d new readings", added)
    return 0


if __name__ == "__main__":
    sys.exit(main())
