//! Errors of the collector and the profile database, each saying what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("unknown event '{name}'; valid events: {valid}")]
    UnknownEvent { name: String, valid: String },

    #[error("bad event '{name}': {why}")]
    BadEventModifier { name: String, why: String },

    #[error(
        "perf_event_open was refused ({source}); kernel.perf_event_paranoid is {paranoid}. \
         Run dcpi as root, or allow it with: sysctl -w kernel.perf_event_paranoid=1 \
         (-1 for --system-wide)"
    )]
    Paranoid {
        paranoid: String,
        source: std::io::Error,
    },

    #[error("cannot open event {event} on cpu {cpu}: {source}")]
    PerfOpen {
        event: String,
        cpu: i32,
        source: std::io::Error,
    },

    #[error("cannot set up sampling: {what}: {source}")]
    PerfSetup {
        what: String,
        source: std::io::Error,
    },

    #[error(
        "cannot write the profile database {path}: {detail}. Choose a writable path with -o PATH"
    )]
    DbUnwritable { path: PathBuf, detail: String },

    #[error("{path} is not a dcpi profile database or is corrupt ({detail}); pass another file with -o/--db")]
    NotADatabase { path: PathBuf, detail: String },

    #[error("cannot read the profile database {path}: {detail}")]
    DbUnreadable { path: PathBuf, detail: String },

    #[error(
        "{path} was written by a newer dcpi (schema version {found}); this dcpi reads schema \
         versions up to {supported}: upgrade dcpi"
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error(
        "{path} does not exist; record a profile first with: dcpi collect -o {path} -- COMMAND"
    )]
    NoDatabase { path: PathBuf },

    #[error("profile database error: {0}")]
    Db(#[from] rusqlite::Error),

    #[error("cannot start {command}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },

    #[error("{0}")]
    Usage(String),

    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, CollectError>;
