//! The profile database schema (version 1).
//!
//! Counts are keyed (epoch, process, image, offset, event) and aggregated, so
//! the database grows with the number of distinct PCs, not with samples.
//! `offset` is a file offset for ELF images (`images.offset_kind = 'file'`),
//! an offset from `_text` for the kernel (`'kernel_text'`), from the module
//! base for modules (`'module'`), and the raw address for `[unknown]`
//! (`'absolute'`); offsets are stored as the 64-bit pattern in SQLite's signed
//! INTEGER.
//!
//! Version 2 added the latency tables (OSprof profiles); a version 1 file is
//! upgraded in place when opened for writing ([`MIGRATE_1_TO_2`]).
//! Version 3 added `kernel_charges` (pkprof): kernel samples taken in one
//! process's context (they stay in `counts` there) that were asynchronous
//! work for another process, and by which link (`softirq NET_RX`, `irq 11`,
//! `workqueue wake`, `workqueue queued`).
//! Version 4 added `runs.sampled_core_hz`: the core clock a dependent-add
//! chain got while the run's events sampled it at the run's rate, measured
//! at the end of the run (see `sampling_cost`).
//! Version 5 added `runs.cpu_features`: the CPUID features that pick the
//! machine description when a hypervisor reports a model number of its own.
//! Version 6 added `runs.target_cpu_s` (the command's time on a CPU, from
//! `wait4`: a guest kernel that accounts steal leaves it out) and
//! `runs.steal_s` (the time the hypervisor took from all the guest's CPUs
//! during the run, from `/proc/stat`): timer samples keep counting while
//! the host runs something else, and the analyzer scales them by the first
//! over the time they sampled.
//! Version 7 added `runs.core_share`: the share of an idle core the command
//! got, by a throughput probe on its CPU through the run (`core_share`).

/// Schema version this build writes and the newest it reads.
pub const SCHEMA_VERSION: i64 = 7;

/// PRAGMA application_id of dcpi databases: "DCPI".
pub const APPLICATION_ID: i64 = 0x4443_5049;

pub const CREATE: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY,
    started_at     TEXT NOT NULL,
    ended_at       TEXT,
    duration_s     REAL,
    mode           TEXT NOT NULL,
    command        TEXT,
    target_pid     INTEGER,
    exit_status    INTEGER,
    interrupted    INTEGER NOT NULL DEFAULT 0,
    complete       INTEGER NOT NULL DEFAULT 0,
    hostname       TEXT,
    kernel         TEXT,
    kernel_build_id TEXT,
    cpu_vendor     TEXT,
    cpu_family     INTEGER,
    cpu_model      INTEGER,
    cpu_stepping   INTEGER,
    cpu_model_name TEXT,
    online_cpus    INTEGER,
    core_hz        REAL,
    core_hz_end    REAL,
    tsc_hz         REAL,
    ticks_per_cycle REAL,
    dcpi_version   TEXT,
    sampled_core_hz REAL,
    cpu_features   TEXT,
    target_cpu_s   REAL,
    steal_s        REAL,
    core_share     REAL
);
CREATE TABLE epochs (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id),
    started_at TEXT NOT NULL,
    ended_at   TEXT
);
CREATE TABLE events (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id),
    position        INTEGER NOT NULL,
    requested       TEXT NOT NULL,
    used            TEXT NOT NULL,
    type            INTEGER NOT NULL,
    config          INTEGER NOT NULL,
    precise         INTEGER NOT NULL,
    unit            TEXT NOT NULL,
    period          INTEGER,
    frequency       INTEGER,
    period_jitter   REAL NOT NULL DEFAULT 0,
    fallback_reason TEXT,
    samples         INTEGER NOT NULL DEFAULT 0,
    total_period    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE images (
    id          INTEGER PRIMARY KEY,
    identity    TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL,
    path        TEXT NOT NULL,
    build_id    TEXT,
    size        INTEGER,
    mtime       INTEGER,
    offset_kind TEXT NOT NULL
);
CREATE TABLE processes (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(id),
    comm           TEXT NOT NULL,
    instance       INTEGER NOT NULL,
    pid            INTEGER NOT NULL,
    parent_id      INTEGER REFERENCES processes(id),
    exec_from_id   INTEGER REFERENCES processes(id),
    cause          TEXT NOT NULL,
    cmdline        TEXT,
    start_ns       INTEGER,
    end_ns         INTEGER,
    user_samples   INTEGER NOT NULL DEFAULT 0,
    kernel_samples INTEGER NOT NULL DEFAULT 0,
    UNIQUE (comm, instance)
);
CREATE TABLE counts (
    epoch_id   INTEGER NOT NULL REFERENCES epochs(id),
    process_id INTEGER NOT NULL REFERENCES processes(id),
    image_id   INTEGER NOT NULL REFERENCES images(id),
    offset     INTEGER NOT NULL,
    event_id   INTEGER NOT NULL REFERENCES events(id),
    count      INTEGER NOT NULL,
    PRIMARY KEY (epoch_id, process_id, image_id, offset, event_id)
) WITHOUT ROWID;
CREATE TABLE collector_stats (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name   TEXT NOT NULL,
    value  INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);
"#;

/// Latency profiles (`dcpi latency`): one set per capture, log2 buckets of
/// CPU cycles per (process, operation, interval).
pub const LATENCY_TABLES: &str = r#"
CREATE TABLE latency_sets (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    epoch_id    INTEGER NOT NULL REFERENCES epochs(id),
    source      TEXT NOT NULL,
    resolution  INTEGER NOT NULL,
    interval_s  REAL,
    core_hz     REAL NOT NULL,
    calls       INTEGER NOT NULL DEFAULT 0,
    unpaired    INTEGER NOT NULL DEFAULT 0,
    lost        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE latency_buckets (
    set_id       INTEGER NOT NULL REFERENCES latency_sets(id),
    process_id   INTEGER NOT NULL REFERENCES processes(id),
    operation    TEXT NOT NULL,
    interval     INTEGER NOT NULL,
    bucket       INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    total_cycles INTEGER NOT NULL,
    PRIMARY KEY (set_id, process_id, operation, interval, bucket)
) WITHOUT ROWID;
CREATE TABLE host_times (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name   TEXT NOT NULL,
    cycles REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
"#;

/// pkprof's charges of asynchronous kernel work.
pub const CHARGE_TABLES: &str = r#"
CREATE TABLE kernel_charges (
    epoch_id        INTEGER NOT NULL REFERENCES epochs(id),
    from_process_id INTEGER NOT NULL REFERENCES processes(id),
    to_process_id   INTEGER NOT NULL REFERENCES processes(id),
    image_id        INTEGER NOT NULL REFERENCES images(id),
    offset          INTEGER NOT NULL,
    event_id        INTEGER NOT NULL REFERENCES events(id),
    link            TEXT NOT NULL,
    count           INTEGER NOT NULL,
    PRIMARY KEY (epoch_id, from_process_id, to_process_id, image_id, offset, event_id, link)
) WITHOUT ROWID;
"#;

/// Upgrade of a version 6 database.
pub const MIGRATE_6_TO_7: &str = "ALTER TABLE runs ADD COLUMN core_share REAL;";

/// Upgrade of a version 5 database.
pub const MIGRATE_5_TO_6: &str = "ALTER TABLE runs ADD COLUMN target_cpu_s REAL;
ALTER TABLE runs ADD COLUMN steal_s REAL;";

/// Upgrade of a version 4 database.
pub const MIGRATE_4_TO_5: &str = "ALTER TABLE runs ADD COLUMN cpu_features TEXT;";

/// Upgrade of a version 3 database.
pub const MIGRATE_3_TO_4: &str = "ALTER TABLE runs ADD COLUMN sampled_core_hz REAL;";

/// Upgrade of a version 2 database.
pub const MIGRATE_2_TO_3: &str = CHARGE_TABLES;

/// Upgrade of a version 1 database.
pub const MIGRATE_1_TO_2: &str = LATENCY_TABLES;
