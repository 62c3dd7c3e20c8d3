//! The profile database: one SQLite file (WAL), written by the daemon and
//! read by the analysis tools while collection may still be running.

pub mod reader;
pub mod schema;
pub mod writer;

use crate::error::{CollectError, Result};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

pub use reader::ProfileReader;
pub use writer::ProfileWriter;

/// Checks that an open connection is a dcpi database this build can read.
fn check_schema(conn: &Connection, path: &Path) -> Result<bool> {
    let not_db = |e: rusqlite::Error| CollectError::NotADatabase {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let app_id: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(not_db)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(not_db)?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(not_db)?;
    if app_id == 0 && version == 0 && tables == 0 {
        return Ok(false); // empty: a new database
    }
    if app_id != schema::APPLICATION_ID {
        return Err(CollectError::NotADatabase {
            path: path.to_path_buf(),
            detail: format!("SQLite file with application_id {app_id:#x}, not dcpi's"),
        });
    }
    if version > schema::SCHEMA_VERSION {
        return Err(CollectError::SchemaTooNew {
            path: path.to_path_buf(),
            found: version,
            supported: schema::SCHEMA_VERSION,
        });
    }
    let integrity: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(not_db)?;
    if integrity != "ok" {
        return Err(CollectError::NotADatabase {
            path: path.to_path_buf(),
            detail: integrity,
        });
    }
    Ok(true)
}

/// Opens (creating if needed) a database for writing.
pub(crate) fn open_for_write(path: &Path) -> Result<Connection> {
    let unwritable = |detail: String| CollectError::DbUnwritable {
        path: path.to_path_buf(),
        detail,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(unwritable(format!(
                "directory {} does not exist",
                dir.display()
            )));
        }
    }
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| unwritable(e.to_string()))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // A foreign or corrupt file is refused before anything is written to
    // it; the check reads one snapshot (another collector may be creating
    // the file meanwhile).
    {
        let snapshot = conn.transaction().map_err(|e| unwritable(e.to_string()))?;
        check_schema(&snapshot, path)?;
    }
    // Switching to WAL needs the file to itself: SQLite answers "locked"
    // at once, without the busy timeout, while another connection is
    // creating the schema (waiting would deadlock): retry.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => break,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(unwritable(e.to_string())),
        }
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Creation and each migration step hold the write lock from the check
    // on: two collectors starting on one new file at once (or one and a
    // daemon) create it once, the second waits and appends its run.
    fn write_lock<'c>(
        conn: &'c mut Connection,
        unwritable: &dyn Fn(String) -> CollectError,
    ) -> Result<rusqlite::Transaction<'c>> {
        conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| unwritable(e.to_string()))
    }
    {
        let tx = write_lock(&mut conn, &unwritable)?;
        if !check_schema(&tx, path)? {
            tx.execute_batch(schema::CREATE)?;
            tx.execute_batch(schema::LATENCY_TABLES)?;
            tx.execute_batch(schema::CHARGE_TABLES)?;
            tx.pragma_update(None, "application_id", schema::APPLICATION_ID)?;
            tx.pragma_update(None, "user_version", schema::SCHEMA_VERSION)?;
            tx.execute(
                "INSERT INTO meta(key, value) VALUES ('created_by', ?1)",
                [format!("dcpi {}", env!("CARGO_PKG_VERSION"))],
            )?;
        }
        tx.commit().map_err(|e| unwritable(e.to_string()))?;
    }
    for (from, step) in [
        (1, schema::MIGRATE_1_TO_2),
        (2, schema::MIGRATE_2_TO_3),
        (3, schema::MIGRATE_3_TO_4),
        (4, schema::MIGRATE_4_TO_5),
        (5, schema::MIGRATE_5_TO_6),
        (6, schema::MIGRATE_6_TO_7),
    ] {
        let tx = write_lock(&mut conn, &unwritable)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == from {
            tx.execute_batch(step)?;
            tx.pragma_update(None, "user_version", from + 1)?;
        }
        tx.commit().map_err(|e| unwritable(e.to_string()))?;
    }
    Ok(conn)
}

/// Opens an existing database read-only.
pub(crate) fn open_for_read(path: &Path) -> Result<Connection> {
    if !path.exists() {
        return Err(CollectError::NoDatabase {
            path: path.to_path_buf(),
        });
    }
    let unreadable = |detail: String| CollectError::DbUnreadable {
        path: path.to_path_buf(),
        detail,
    };
    // No permission is not corruption: say which.
    if let Err(e) = std::fs::File::open(path) {
        return Err(unreadable(format!(
            "{e}; run as a user who may read it, or copy it somewhere readable"
        )));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::CannotOpen) => unreadable(format!(
            "{e} (a profile database is in WAL mode: reading it needs its -wal and -shm \
             files readable, or a directory where they can be made)"
        )),
        _ => CollectError::NotADatabase {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
    })?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let conn = readable_wal(conn, path)?;
    if !check_schema(&conn, path)? {
        return Err(CollectError::NotADatabase {
            path: path.to_path_buf(),
            detail: "empty file".into(),
        });
    }
    Ok(conn)
}

/// `conn`, or where a WAL database cannot be read because its -shm file
/// cannot be made (a copy in a directory this user may not write, no -wal
/// beside it), the same file opened immutable: nothing is writing it.
fn readable_wal(conn: Connection, path: &Path) -> Result<Connection> {
    let probe = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    });
    let Err(e) = probe else {
        return Ok(conn);
    };
    let blocked = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
    );
    if !blocked {
        return Ok(conn); // check_schema reports it
    }
    let wal = std::path::PathBuf::from(format!("{}-wal", path.display()));
    let pending = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    if pending {
        return Err(CollectError::DbUnreadable {
            path: path.to_path_buf(),
            detail: format!(
                "{e}: its newest data is in {} and reading it needs a -shm file this user \
                 may not create; read it as the user who wrote it, or from a writable directory",
                wal.display()
            ),
        });
    }
    drop(conn);
    let escaped: String = path
        .display()
        .to_string()
        .chars()
        .map(|c| match c {
            '%' => "%25".to_string(),
            '?' => "%3f".to_string(),
            '#' => "%23".to_string(),
            c => c.to_string(),
        })
        .collect();
    let uri = format!("file:{escaped}?immutable=1");
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| CollectError::DbUnreadable {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    Ok(conn)
}

/// Current UTC time as RFC 3339 text.
pub(crate) fn now_text() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = if month <= 2 { y + 1 } else { y };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_text_is_rfc3339() {
        let t = now_text();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }

    #[test]
    fn rejects_foreign_and_corrupt_files() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.db");
        std::fs::write(&junk, vec![0x55u8; 8192]).unwrap();
        let err = open_for_read(&junk).unwrap_err().to_string();
        assert!(err.contains("not a dcpi profile database"), "{err}");
        let err = open_for_write(&junk).unwrap_err().to_string();
        assert!(err.contains("not a dcpi profile database"), "{err}");

        let other = dir.path().join("other.db");
        let c = Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE t(x)").unwrap();
        drop(c);
        let err = open_for_read(&other).unwrap_err().to_string();
        assert!(err.contains("not dcpi's"), "{err}");

        let missing = dir.path().join("none.db");
        assert!(open_for_read(&missing)
            .unwrap_err()
            .to_string()
            .contains("dcpi collect"));
        let nodir = dir.path().join("no/such/dir/x.db");
        assert!(open_for_write(&nodir)
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
    }

    #[test]
    fn upgrades_a_version_1_file_to_the_current_schema() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v1.db");
        let c = Connection::open(&p).unwrap();
        // Version 1's runs table had no sampled clock, no features, no
        // on-CPU time, no steal and no core share.
        let v1 = schema::CREATE.replace(
            ",\n    sampled_core_hz REAL,\n    cpu_features   TEXT,\n    target_cpu_s   REAL,\n    steal_s        REAL,\n    core_share     REAL",
            "",
        );
        assert_ne!(v1, schema::CREATE);
        c.execute_batch(&v1).unwrap();
        c.pragma_update(None, "application_id", schema::APPLICATION_ID)
            .unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        drop(c);
        let c = open_for_write(&p).unwrap();
        let v: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, schema::SCHEMA_VERSION);
        c.query_row(
            "SELECT sampled_core_hz, cpu_features, target_cpu_s, steal_s, core_share FROM runs",
            [],
            |_| Ok(()),
        )
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(()),
            e => Err(e),
        })
        .unwrap();
        for table in ["latency_buckets", "kernel_charges"] {
            let n: i64 = c
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = ?1",
                    [table],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(n, 1, "{table}");
        }
    }

    #[test]
    fn collectors_starting_on_one_new_file_at_once_create_it_once() {
        // Before the write lock, the second of two collectors started on a
        // new file together failed with "table meta already exists".
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("race.db");
        for _ in 0..5 {
            let _ = std::fs::remove_file(&p);
            let gate = std::sync::Barrier::new(6);
            std::thread::scope(|s| {
                let opened: Vec<_> = (0..6)
                    .map(|_| {
                        s.spawn(|| {
                            gate.wait();
                            open_for_write(&p).map(|_| ())
                        })
                    })
                    .collect();
                for o in opened {
                    o.join().unwrap().unwrap();
                }
            });
            let c = open_for_read(&p).unwrap();
            let made: i64 = c
                .query_row(
                    "SELECT count(*) FROM meta WHERE key = 'created_by'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(made, 1);
        }
    }

    #[test]
    fn rejects_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.db");
        drop(open_for_write(&p).unwrap());
        let c = Connection::open(&p).unwrap();
        c.pragma_update(None, "user_version", schema::SCHEMA_VERSION + 1)
            .unwrap();
        drop(c);
        let err = open_for_read(&p).unwrap_err().to_string();
        assert!(err.contains("newer dcpi"), "{err}");
    }
}
